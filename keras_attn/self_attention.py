"""Self-attention: queries, keys and values projected from the same sequence."""

import keras

from keras_attn import _validation
from keras_attn.multi_head import MultiHeadAttention


@keras.saving.register_keras_serializable(package="keras_attn")
class SelfAttention(MultiHeadAttention):
    """Self-attention `H = V softmax(Kᵀ Q / √d₃)` with `Q, K, V = W_q X, W_k X, W_v X`.

    The source text's formula (columns are positions): every position of `X`
    attends to every position of the same `X` (Vaswani et al. 2017; Lin et al.
    2017 for the self-attentive sentence embedding). By default one head and no
    output projection, exactly as the formula; `num_heads > 1` and
    `use_output_projection=True` make it the Transformer's self-attention
    sublayer. Positions enter through an encoding added to `X`
    (`SinusoidalPositionEncoding`, `LearnedPositionEmbedding`), a rotation of
    `Q` and `K` (`rope_max_wavelength`) or a score bias (`ALiBiBias`).

    Args:
        key_dim: size `d₃` of the queries and keys (per head).
        value_dim: size of the values (per head); default `key_dim`.
        num_heads: number of heads.
        use_output_projection: add the output projection `W_o`.
        **kwargs: the other `keras_attn.MultiHeadAttention` arguments.

    Call arguments:
        inputs: `X` of shape `(B, T, d)`.
        mask: optional `(B, T)` padding mask (taken from the Keras mask of
            `inputs` when not given) or a `(B, T, T)` mask.
        attention_bias: optional score bias broadcastable to `(B, heads, T, T)`.
        use_causal_mask: each position attends only to itself and the past.
        return_attention_scores: also return the weights `(B, heads, T, T)`.
        training: whether dropout is active.

    Returns:
        `H` of shape `(B, T, num_heads * value_dim)` (or the projection's size).

    Example:

    >>> x = np.random.rand(2, 7, 12).astype("float32")
    >>> tuple(keras_attn.SelfAttention(key_dim=6)(x).shape)
    (2, 7, 6)
    """

    def __init__(
        self, key_dim, value_dim=None, num_heads=1, use_output_projection=False, **kwargs
    ):
        super().__init__(
            num_heads=num_heads,
            key_dim=key_dim,
            value_dim=value_dim,
            use_output_projection=use_output_projection,
            **kwargs,
        )

    def build(self, inputs_shape):
        super().build(inputs_shape, inputs_shape)

    def compute_output_spec(self, inputs, return_attention_scores=False, **kwargs):
        return super().compute_output_spec(
            inputs, inputs, return_attention_scores=return_attention_scores
        )

    def call(
        self,
        inputs,
        mask=None,
        inputs_mask=None,
        attention_bias=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        # Keras fills `mask` when `inputs` is the only tensor argument and
        # `inputs_mask` when `attention_bias` is given too.
        padding = None
        if mask is not None and len(mask.shape) == 2:
            padding, mask = mask, None
        if inputs_mask is not None:
            padding = inputs_mask if padding is None else padding
        _validation.check_mask(
            "mask", padding, [(inputs.shape[0], inputs.shape[1])], self.name
        )
        _validation.check_dtype("floating", self.name, inputs=inputs)
        return super().call(
            inputs,
            inputs,
            mask=mask,
            query_mask=padding,
            value_mask=padding,
            attention_bias=attention_bias,
            use_causal_mask=use_causal_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )
