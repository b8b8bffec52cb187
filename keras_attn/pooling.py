"""Attention pooling: a sequence summarised by attention with a learned query."""

import keras
from keras import ops

from keras_attn import _initializers, _validation
from keras_attn import ops as attn_ops


@keras.saving.register_keras_serializable(package="keras_attn")
class AttentionPooling(keras.layers.Layer):
    """Attention pooling with a learned context vector (Yang et al. 2016, eqs. 5–7).

    "Hierarchical Attention Networks for Document Classification": each step is
    scored against a trained context vector `u_w`, which plays the part of the
    query ("which step is informative?"),

        `u_t = tanh(W h_t + b)`,  `α_t = softmax_t(u_tᵀ u_w)`,  `s = Σ_t α_t h_t`,

    the feed-forward attention of Raffel & Ellis 2015 in the same form. Masked
    steps get zero weight; a sequence with every step masked pools to zeros.

    Args:
        units: size of `u_t` and `u_w` (default: the input size).
        kernel_initializer: initializer of `W` and `u_w`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(B, T, d)` steps `h_t`.
        mask: optional `(B, T)` boolean padding mask (also taken from the
            Keras mask of `inputs`).
        return_attention_scores: also return the weights `α`.

    Returns:
        The pooled `(B, d)`, and with `return_attention_scores=True` the weights
        `(B, T)`.

    Example:

    >>> steps = np.random.rand(2, 7, 16).astype("float32")
    >>> pooled, weights = keras_attn.AttentionPooling(units=8)(
    ...     steps, return_attention_scores=True)
    >>> tuple(pooled.shape), tuple(weights.shape)
    ((2, 16), (2, 7))
    """

    def __init__(self, units=None, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.units = _validation.check_integer("units", units, allow_none=True)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.supports_masking = True
        self.projection = self.context_vector = None

    def build(self, inputs_shape):
        _validation.check_rank("inputs", inputs_shape, 3, self.name)
        units = self.units or inputs_shape[-1]
        self.projection = keras.layers.Dense(
            units,
            activation="tanh",
            kernel_initializer=_initializers.fresh(self.kernel_initializer, 0),
            dtype=self.dtype_policy,
            name="projection",
        )
        self.projection.build((None, inputs_shape[-1]))
        self.context_vector = self.add_weight(
            name="context_vector", shape=(units, 1),
            initializer=_initializers.fresh(self.kernel_initializer, 1),
        )

    def call(self, inputs, mask=None, return_attention_scores=False):
        _validation.check_rank("inputs", inputs.shape, 3, self.name)
        _validation.check_dtype("floating", self.name, inputs=inputs)
        _validation.check_mask("mask", mask, [(inputs.shape[0], inputs.shape[1])], self.name)
        batch, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        hidden = self.projection(ops.reshape(inputs, (-1, inputs.shape[-1])))
        scores = ops.matmul(hidden, ops.cast(self.context_vector, hidden.dtype))
        weights = attn_ops.masked_softmax(ops.reshape(scores, (batch, length)), mask)
        pooled = ops.squeeze(attn_ops.weighted_sum(ops.expand_dims(weights, 1), inputs), 1)
        if return_attention_scores:
            return pooled, weights
        return pooled

    def compute_mask(self, inputs, mask=None):
        return None  # the time axis is pooled away

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        }
