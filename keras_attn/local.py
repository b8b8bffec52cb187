"""Local attention (Luong et al. 2015): attend to a window of 2D+1 source positions."""

import keras
from keras import ops

from keras_attn import _validation
from keras_attn import ops as attn_ops
from keras_attn.luong import LuongAttention

_POSITIONS = ("monotonic", "predictive")


@keras.saving.register_keras_serializable(package="keras_attn")
class LocalAttention(LuongAttention):
    """Local attention of Luong, Pham & Manning 2015, section 3.2.

    "Effective Approaches to Attention-based Neural Machine Translation". Where
    global attention scores every source position, target step `t` looks only
    at the window `[p_t − D, p_t + D]` around an aligned position `p_t`:

    * `position="monotonic"` (local-m): `p_t = t`, source and target assumed
      roughly aligned; the weights are the softmax of the scores over the window.
    * `position="predictive"` (local-p): `p_t = (S − 1) · sigmoid(v_pᵀ tanh(W_p h_t))`
      (eq. 9), with `S` each example's unpadded source length, and the window's
      softmax weights are multiplied by a Gaussian centred on `p_t` (eq. 10):
      `a_t(s) = align(h_t, h̄_s) · exp(−(s − p_t)² / (2σ²))`, `σ = D / 2`.
      `p_t` is differentiable through the Gaussian, as in the paper.

    Positions count from 0 (the paper's `p_t ∈ [0, S]` becomes `[0, S − 1]`, so
    the window's centre is always a real source position). The window is
    centred on `round(p_t)`; positions outside the source or masked as padding
    get zero weight, and a window with no such position at all (local-m past
    the end of the source) gives zero weights and a zero context.

    Only the window is scored: its keys and values are gathered, so a step
    costs `O(D)` score evaluations instead of `O(S)`. Any Luong score works, and
    `precompute_keys` works as in `LuongAttention`.

    Args:
        window: `D`, the half-width of the window (`2D + 1` positions);
            `D ≥ 1` for `"predictive"` (`σ = D / 2` must be positive).
        position: `"monotonic"` (local-m) or `"predictive"` (local-p).
        score: `"dot"`, `"general"` or `"concat"`, as `LuongAttention`.
        scale: learn a scalar multiplying the scores.
        units: hidden size of the `concat` score.
        position_units: hidden size of `W_p` (default: the query size).
        dropout: dropout rate on the attention weights during training.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: `(B, Tq, dq)` target states, or `(B, dq)` for one decoder step.
        value: `(B, Tk, dv)` source states.
        key: optional `(B, Tk, dk)`; defaults to `value`.
        mask: optional `(B, Tk)` or `(B, Tq, Tk)` boolean mask.
        query_mask, value_mask, key_mask: `(B, T)` padding masks, filled in from
            the inputs' Keras masks.
        query_positions: integer target positions `t` for local-m, `(B,)` or
            `(B, Tq)`. Needed for a rank-2 query (a decoder step); defaults to
            `0 … Tq−1` for a rank-3 one. Ignored by local-p.
        return_attention_scores: also return the weights, scattered back to
            `(B, Tq, Tk)` (zero outside each window) for plotting.
        precomputed_keys: optional `precompute_keys(key)`.
        training: whether dropout is active.

    Returns:
        The context `(B, Tq, dv)` (or `(B, dv)`), and with
        `return_attention_scores=True` the weights `(B, Tq, Tk)` (or `(B, Tk)`).

    Example:

    >>> h_t = np.random.rand(2, 4, 8).astype("float32")
    >>> h_s = np.random.rand(2, 10, 8).astype("float32")
    >>> local = keras_attn.LocalAttention(window=2, position="predictive")
    >>> context, weights = local(h_t, h_s, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 4, 8), (2, 4, 10))
    >>> int((ops.convert_to_numpy(weights) > 0).sum(-1).max()) <= 5
    True
    """

    def __init__(
        self,
        window,
        position="predictive",
        score="general",
        scale=False,
        units=None,
        position_units=None,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(score=score, scale=scale, units=units, dropout=dropout, **kwargs)
        if position not in _POSITIONS:
            raise ValueError(f"`position` must be one of {_POSITIONS}; received {position!r}.")
        window = _validation.check_integer("window", window, least=0)
        if position == "predictive" and window < 1:
            raise ValueError(
                "`window` must be ≥ 1 with position='predictive' (the Gaussian's "
                f"σ = window / 2 must be positive); received {window}."
            )
        self.window = window
        self.position = position
        self.position_units = _validation.check_integer(
            "position_units", position_units, allow_none=True
        )
        self.position_hidden = self.position_output = None

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        if self.position != "predictive":
            return
        features = query_shape[-1]
        # W_p and v_p of eq. 9; v_p has no bias in the paper, and W_p none either.
        self.position_hidden = keras.layers.Dense(
            self.position_units or features,
            use_bias=False,
            activation="tanh",
            dtype=self.dtype_policy,
            name="position_hidden",
        )
        self.position_output = keras.layers.Dense(
            1, use_bias=False, dtype=self.dtype_policy, name="position_output"
        )
        self.position_hidden.build((None, features))
        self.position_output.build((None, self.position_hidden.units))

    # -- positions ------------------------------------------------------------
    def _source_lengths(self, key_length, key_padding):
        if key_padding is None:
            return ops.cast(key_length, "float32")
        return ops.sum(ops.cast(key_padding, "float32"), axis=-1, keepdims=True)

    def _aligned_positions(self, query, key_length, key_padding, query_positions, single_query):
        """`p_t`, float32 `(B, Tq)`."""
        if self.position == "predictive":
            rows = ops.reshape(query, (-1, query.shape[-1]))
            logits = self.position_output(self.position_hidden(rows))
            logits = ops.reshape(ops.cast(logits, "float32"), ops.shape(query)[:2])
            lengths = self._source_lengths(key_length, key_padding)
            return (lengths - 1.0) * ops.sigmoid(logits)
        if query_positions is None:
            if single_query:
                raise ValueError(
                    f"{self.name}: local-m (position='monotonic') needs the target "
                    "position of a rank-2 query (one decoder step): pass "
                    "`query_positions` of shape (B,); received none."
                )
            positions = ops.expand_dims(ops.arange(ops.shape(query)[1]), 0)
            return ops.cast(positions, "float32") + ops.zeros(ops.shape(query)[:2], "float32")
        positions = ops.convert_to_tensor(query_positions)
        _validation.check_rank("query_positions", positions.shape, (0, 1, 2), self.name)
        _validation.check_dtype("integer", self.name, query_positions=positions)
        if len(positions.shape) == 1:
            positions = ops.expand_dims(positions, -1)
        return ops.cast(positions, "float32") + ops.zeros(ops.shape(query)[:2], "float32")

    # -- the mechanism --------------------------------------------------------
    def call(
        self,
        query,
        value,
        key=None,
        mask=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        query_positions=None,
        return_attention_scores=False,
        precomputed_keys=None,
        training=None,
    ):
        query, key, mask, query_mask, value_mask, single_query = self._standardize_inputs(
            query, value, key, mask, query_mask, value_mask, key_mask
        )
        explicit_pair_mask = mask if mask is not None and len(mask.shape) == 3 else None
        key_padding = attn_ops.merge_masks(
            value_mask, key_mask, mask if explicit_pair_mask is None else None
        )

        key_length = ops.shape(value)[1]
        aligned = self._aligned_positions(
            query, key_length, key_padding, query_positions, single_query
        )
        # (B, Tq, W) source positions of each window, and which of them exist.
        offsets = ops.arange(-self.window, self.window + 1, dtype="int32")
        centre = ops.cast(ops.round(aligned), "int32")
        index = ops.expand_dims(centre, -1) + offsets
        inside = ops.logical_and(index >= 0, index < key_length)
        index = ops.clip(index, 0, key_length - 1)
        valid = attn_ops.merge_masks(
            inside,
            None if key_padding is None else _gather_rows(key_padding, index),
            None if query_mask is None else ops.expand_dims(query_mask, -1),
            None if explicit_pair_mask is None else ops.take_along_axis(
                ops.cast(explicit_pair_mask, "bool"), index, axis=2
            ),
        )

        keys = self._keys_for_score(query, key, precomputed_keys)
        # Each (example, target step) becomes its own batch row with W keys.
        width = 2 * self.window + 1
        rows_query = ops.reshape(query, (-1, 1, query.shape[-1]))
        rows_keys = ops.reshape(_gather_rows(keys, index), (-1, width, keys.shape[-1]))
        scores = self.score_layer.score(rows_query, rows_keys)
        scores = ops.reshape(scores, ops.shape(index))
        if self.scale is not None:
            scores = scores * ops.cast(self.scale, scores.dtype)
        weights = attn_ops.masked_softmax(scores, valid)
        if self.position == "predictive":
            sigma = self.window / 2.0
            distance = ops.cast(index, "float32") - ops.expand_dims(aligned, -1)
            gaussian = ops.exp(-ops.square(distance) / (2.0 * sigma**2))
            weights = weights * ops.cast(gaussian, weights.dtype)

        dropped = self.dropout_layer(weights, training=training) if self.dropout else weights
        values = ops.reshape(_gather_rows(value, index), (-1, width, value.shape[-1]))
        context = attn_ops.weighted_sum(ops.reshape(dropped, (-1, 1, width)), values)
        context = ops.reshape(context, (ops.shape(query)[0], ops.shape(query)[1], value.shape[-1]))
        if not return_attention_scores:
            return ops.squeeze(context, 1) if single_query else context
        # Back to (B, Tq, Tk): out-of-window positions 0, clipped duplicates carry 0.
        placed = ops.one_hot(index, key_length, dtype=weights.dtype)
        full = ops.sum(ops.expand_dims(weights, -1) * placed, axis=-2)
        if single_query:
            return ops.squeeze(context, 1), ops.squeeze(full, 1)
        return context, full

    def get_config(self):
        config = super().get_config()
        config.update(
            window=self.window, position=self.position, position_units=self.position_units
        )
        return config


def _gather_rows(x, index):
    """`x[b, index[b, ...]]`: rows of `x` `(B, T, ...)` at `index` `(B, Tq, W)`."""
    batch, length = ops.shape(x)[0], ops.shape(x)[1]
    flat = ops.reshape(x, (-1, *x.shape[2:]))
    shift = ops.reshape(ops.arange(batch, dtype="int32") * length, (-1, 1, 1))
    return ops.take(flat, index + shift, axis=0)
