"""Soft key-value attention with any score function."""

import keras
from keras import ops

from keras_attn import _validation
from keras_attn import ops as attn_ops
from keras_attn import scores as scores_lib


@keras.saving.register_keras_serializable(package="keras_attn")
class Attention(keras.layers.Layer):
    """Soft (key-value) attention: `c_i = Σ_j softmax_j(s(q_i, k_j)) v_j`.

    The general mechanism of the attention chapter (Bahdanau et al. 2015; Luong,
    Pham & Manning 2015; Vaswani et al. 2017): each query `q_i` scores every key
    `k_j` with a score function `s`, the scores over the unmasked keys are
    normalised with a softmax into weights `α_ij`, and the context is the
    weighted sum of the values `v_j`. Keys and values are separate memories
    ("key-value attention"); given only `value`, it serves as both.

    Masks: a key is ignored where its padding mask (the Keras mask of `value` or
    `key`, or an explicit `mask`) is false, and under `use_causal_mask` where
    `j > i`. A padded query (the Keras mask of `query`) and a query whose keys are
    all masked get zero weights and a zero context, never NaN.

    Args:
        score: a score name (`"dot"`, `"scaled_dot"`, `"general"`, `"additive"`,
            `"cosine"`, `"concat"`, see `keras_attn.scores.SCORES`) or an
            `AttentionScore` layer.
        use_scale: multiply the scores by a learned scalar `g` (initially 1), as
            `keras.layers.Attention(use_scale=True)` and TF-Addons'
            `LuongAttention(scale=True)`.
        dropout: dropout rate on the attention weights during training.
        seed: seed of that dropout.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: `(B, Tq, dq)`, or `(B, dq)` for a single query per example.
        value: `(B, Tk, dv)`.
        key: optional `(B, Tk, dk)`; defaults to `value`.
        mask: optional boolean mask, `(B, Tk)` over keys or `(B, Tq, Tk)`; also
            accepts Keras's `[query_mask, value_mask]` list.
        query_mask, value_mask, key_mask: `(B, T)` padding masks; filled in from
            the inputs' Keras masks when not given.
        attention_bias: optional additive score bias broadcastable to
            `(B, Tq, Tk)` (e.g. ALiBi).
        use_causal_mask: forbid query `i` from attending to keys `j > i`.
        return_attention_scores: also return the weights.
        precomputed_keys: optional result of `precompute_keys(key)`, to skip the
            key-only part of the score (a decoder computes it once per sequence).
        training: whether dropout is active.

    Returns:
        The context `(B, Tq, dv)` (or `(B, dv)`), and with
        `return_attention_scores=True` also the weights `(B, Tq, Tk)` (or `(B, Tk)`).

    Example:

    >>> query = np.random.rand(2, 3, 8).astype("float32")
    >>> memory = np.random.rand(2, 5, 8).astype("float32")
    >>> context, weights = keras_attn.Attention(score="scaled_dot")(
    ...     query, memory, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 8), (2, 3, 5))
    """

    def __init__(self, score="dot", use_scale=False, dropout=0.0, seed=None, **kwargs):
        _validation.refuse_memory_arguments(type(self).__name__, kwargs)
        super().__init__(**kwargs)
        self.score_layer = scores_lib.get(score, dtype=self.dtype_policy)
        self.use_scale = bool(use_scale)
        self.dropout = _validation.check_number("dropout", dropout, low_inclusive=True, high=1.0)
        self.seed = seed
        self.dropout_layer = keras.layers.Dropout(self.dropout, seed=seed)
        self.supports_masking = True
        self.scale = None

    # -- shapes ---------------------------------------------------------------
    def _check_shapes(self, query_shape, value_shape, key_shape):
        _validation.check_query_key_value(query_shape, value_shape, key_shape, (2, 3), self.name)

    def build(self, query_shape, value_shape, key_shape=None):
        self._check_shapes(query_shape, value_shape, key_shape)
        query_shape = tuple(query_shape)
        if len(query_shape) == 2:
            query_shape = (query_shape[0], 1, query_shape[1])
        if not self.score_layer.built:
            self.score_layer.build(query_shape, tuple(key_shape or value_shape))
        if self.use_scale:
            self.scale = self.add_weight(name="scale", shape=(), initializer="ones")

    def precompute_keys(self, key):
        """The key-only part of the score (e.g. `U k`); pass it back as
        `precomputed_keys=` on every call over the same keys."""
        return self.score_layer.precompute_keys(key)

    # -- the mechanism --------------------------------------------------------
    def _resolve_masks(self, mask, query_mask, value_mask):
        if isinstance(mask, (list, tuple)):
            if len(mask) != 2:
                raise ValueError(
                    "A list `mask` must be `[query_mask, value_mask]`; received "
                    f"{len(mask)} masks."
                )
            query_mask = mask[0] if query_mask is None else query_mask
            value_mask = mask[1] if value_mask is None else value_mask
            mask = None
        return mask, query_mask, value_mask

    def _standardize_inputs(self, query, value, key, mask, query_mask, value_mask, key_mask=None):
        """Checks the inputs; a rank-2 query becomes `(B, 1, dq)`, `key` defaults to `value`.

        Returns `(query, key, mask, query_mask, value_mask, single_query)`.
        """
        key_shape = None if key is None else key.shape
        self._check_shapes(query.shape, value.shape, key_shape)
        _validation.check_dtype("floating", self.name, query=query, value=value, key=key)
        mask, query_mask, value_mask = self._resolve_masks(mask, query_mask, value_mask)
        single_query = len(query.shape) == 2
        if single_query:
            query = ops.expand_dims(query, 1)
            query_mask = None
        if key is None:
            key = value
        _validation.check_attention_mask(mask, query, value, self.name)
        _validation.check_padding_masks(
            query.shape, value.shape, self.name,
            query_mask=query_mask, value_mask=value_mask, key_mask=key_mask,
        )
        return query, key, mask, query_mask, value_mask, single_query

    def _keys_for_score(self, query, key, precomputed_keys):
        """`precompute_keys(key)`, or the caller's `precomputed_keys` once checked."""
        if precomputed_keys is None:
            return self.precompute_keys(key)
        size = self.score_layer.precomputed_keys_size(query.shape[-1], key.shape[-1])
        _validation.check_precomputed_keys(precomputed_keys, key.shape, size, self.name)
        return precomputed_keys

    def _scores(self, query, key, precomputed_keys):
        scores = self.score_layer.score(query, self._keys_for_score(query, key, precomputed_keys))
        if self.scale is not None:
            scores = scores * ops.cast(self.scale, scores.dtype)
        return scores

    def _attention_weights(self, scores, training=None, **masks):
        """Scores → weights: soft attention's masked softmax (`attention_weights`)."""
        return attn_ops.attention_weights(scores, **masks)

    def call(
        self,
        query,
        value,
        key=None,
        mask=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_bias=None,
        use_causal_mask=False,
        return_attention_scores=False,
        precomputed_keys=None,
        training=None,
    ):
        query, key, mask, query_mask, value_mask, single_query = self._standardize_inputs(
            query, value, key, mask, query_mask, value_mask, key_mask
        )
        weights = self._attention_weights(
            self._scores(query, key, precomputed_keys),
            training=training,
            mask=mask,
            query_mask=query_mask,
            key_masks=(value_mask, key_mask),
            use_causal_mask=use_causal_mask,
            attention_bias=attention_bias,
        )
        dropped = self.dropout_layer(weights, training=training) if self.dropout else weights
        context = attn_ops.weighted_sum(dropped, value)
        if single_query:
            context, weights = ops.squeeze(context, 1), ops.squeeze(weights, 1)
        if return_attention_scores:
            return context, weights
        return context

    def compute_mask(self, query, previous_mask=None):
        # Not `previous_mask`: Keras sets that to an explicit `mask=` (over keys).
        return _validation.query_output_mask(query)

    def get_config(self):
        return {
            **super().get_config(),
            "score": keras.saving.serialize_keras_object(self.score_layer),
            "use_scale": self.use_scale,
            "dropout": self.dropout,
            "seed": self.seed,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("score"), dict):
            config["score"] = scores_lib.get(config["score"])
        return cls(**config)
