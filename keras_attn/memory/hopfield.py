"""The modern (continuous) Hopfield network and the Hopfield layer (Ramsauer et al. 2020)."""

import math

import keras
from keras import ops

from keras_attn import _validation
from keras_attn import ops as attn_ops


@keras.saving.register_keras_serializable(package="keras_attn")
class ModernHopfield(keras.layers.Layer):
    """Continuous Hopfield retrieval `ξ ← Y softmax(β Yᵀ ξ)` (Ramsauer et al. 2020).

    "Hopfield Networks is All You Need". Stored patterns `y_1 … y_M` (the rows
    of `Y`) define the energy `E(ξ) = −β⁻¹ log Σ_μ exp(β y_μᵀ ξ) + ½ ξᵀξ + C`;
    its update rule

        `ξ_new = Yᵀ softmax(β Y ξ)`

    never raises `E`, retrieves a well-separated pattern in one step (with an
    error exponentially small in the separation), and stores exponentially
    many patterns in the dimension. One step is attention with `ξ` as query and
    `Y` as keys and values; `update_steps` iterates it.

    With `key_dim` set it is the paper's *Hopfield layer*: state patterns `R`
    and stored patterns `Y` are projected, `Q = R W_Q`, `K = Y W_K`, retrieval
    runs in that space, and the result is projected by `W_V`:

        `Z = softmax(β Q Kᵀ) K W_V`   (i.e. values `Y W_K W_V`, eq. 10).

    Args:
        beta: inverse temperature `β` (default `1/√d`, `d` the retrieval space).
        update_steps: updates applied to the state (the last one's weights are
            returned).
        key_dim: if set, learn `W_Q`, `W_K` into this many dimensions (and `W_V`).
        value_dim: output size of `W_V` (default: the stored patterns' size);
            only with `key_dim`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        state: state patterns (queries) `(B, T, d)` or `(B, d)`.
        stored: stored patterns `(B, M, d_y)`; without projections `d_y = d`.
        mask: optional `(B, M)` boolean mask of the stored patterns (also
            taken from the Keras mask of `stored`).
        return_attention_scores: also return the last update's weights.

    Returns:
        The retrieved patterns `(B, T, d_out)` (or `(B, d_out)`), and the
        weights `(B, T, M)` (or `(B, M)`) when asked.

    Example:

    >>> rng = np.random.default_rng(0)
    >>> stored = np.sign(rng.normal(size=(1, 1000, 64))).astype("float32")
    >>> noisy = stored[:, 7] * np.where(rng.random((1, 64)) < 0.1, -1.0, 1.0)
    >>> retrieved = keras_attn.memory.ModernHopfield(beta=1.0)(noisy, stored)
    >>> bool(np.allclose(retrieved, stored[:, 7], atol=1e-3))
    True
    """

    def __init__(self, beta=None, update_steps=1, key_dim=None, value_dim=None, **kwargs):
        super().__init__(**kwargs)
        update_steps = _validation.check_integer("update_steps", update_steps)
        key_dim = _validation.check_integer("key_dim", key_dim, allow_none=True)
        value_dim = _validation.check_integer("value_dim", value_dim, allow_none=True)
        if value_dim is not None and key_dim is None:
            raise ValueError("`value_dim` needs `key_dim`: W_V projects the projected patterns.")
        self.beta = _validation.check_number("beta", beta, allow_none=True)
        self.update_steps = update_steps
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.supports_masking = True
        self.query_projection = self.key_projection = self.value_projection = None

    def _dense(self, units, name):
        return keras.layers.Dense(units, use_bias=False, dtype=self.dtype_policy, name=name)

    def _check(self, state_shape, stored_shape):
        _validation.check_rank("state", state_shape, (2, 3), self.name)
        _validation.check_rank("stored", stored_shape, 3, self.name)
        _validation.check_same_dim(
            "state", state_shape, 0, "stored", stored_shape, 0, "batch size", self.name
        )
        if self.key_dim is None:
            _validation.check_same_dim(
                "state", state_shape, -1, "stored", stored_shape, -1,
                "pattern size (without key_dim there are no projections)", self.name,
            )

    def build(self, state_shape, stored_shape):
        self._check(state_shape, stored_shape)
        if self.key_dim is None:
            return
        self.query_projection = self._dense(self.key_dim, "query_projection")
        self.query_projection.build((None, state_shape[-1]))
        self.key_projection = self._dense(self.key_dim, "key_projection")
        self.key_projection.build((None, stored_shape[-1]))
        self.value_projection = self._dense(self.value_dim or stored_shape[-1], "value_projection")
        self.value_projection.build((None, self.key_dim))

    def call(self, state, stored, mask=None, stored_mask=None, return_attention_scores=False):
        self._check(state.shape, stored.shape)
        _validation.check_dtype("floating", self.name, state=state, stored=stored)
        mask = attn_ops.merge_masks(mask, stored_mask)
        _validation.check_mask("mask", mask, [(stored.shape[0], stored.shape[1])], self.name)
        single = len(state.shape) == 2
        query = ops.expand_dims(state, 1) if single else state
        keys = stored
        if self.key_dim is not None:
            query = self.query_projection(query)
            keys = self.key_projection(stored)
        beta = self.beta if self.beta is not None else 1.0 / math.sqrt(keys.shape[-1])
        key_mask = None if mask is None else ops.expand_dims(ops.cast(mask, "bool"), 1)
        for _ in range(self.update_steps):
            scores = ops.matmul(query, ops.swapaxes(keys, -1, -2)) * ops.cast(beta, query.dtype)
            weights = attn_ops.masked_softmax(scores, key_mask)
            query = attn_ops.weighted_sum(weights, keys)
        if self.value_projection is not None:
            query = self.value_projection(query)
        if single:
            query, weights = ops.squeeze(query, 1), ops.squeeze(weights, 1)
        return (query, weights) if return_attention_scores else query

    def energy(self, state, stored):
        """`E(ξ) = −β⁻¹ lse(β, Y ξ) + ½ ξᵀξ` per state, without projections: `(B, T)`."""
        query = ops.expand_dims(state, 1) if len(state.shape) == 2 else state
        beta = self.beta if self.beta is not None else 1.0 / math.sqrt(stored.shape[-1])
        scores = ops.matmul(query, ops.swapaxes(stored, -1, -2)) * beta
        return -ops.logsumexp(scores, axis=-1) / beta + 0.5 * ops.sum(query * query, axis=-1)

    def compute_mask(self, state, previous_mask=None):
        return _validation.query_output_mask(state)

    def get_config(self):
        return {
            **super().get_config(),
            "beta": self.beta,
            "update_steps": self.update_steps,
            "key_dim": self.key_dim,
            "value_dim": self.value_dim,
        }
