"""Bahdanau (additive) attention, as in the source text, fixed and extended."""

import keras

from keras_attn.attention import Attention
from keras_attn.scores import AdditiveScore


@keras.saving.register_keras_serializable(package="keras_attn")
class BahdanauAttention(Attention):
    """Additive attention of Bahdanau, Cho & Bengio 2015.

    `e_j = vᵀ tanh(W₁ q + W₂ h_j + b)`, `α = softmax(e)`, `c = Σ_j α_j h_j`, with
    the decoder state `q = s_{i-1}` as query and the encoder outputs `h_j` as
    both keys and values ("Neural Machine Translation by Jointly Learning to
    Align and Translate", appendix A.1.2).

    The source text's layer (`units`) with its bug fixed (it called
    `super(BahdanauAttention, self)` from a class named `Attention`) and three
    additions:

    * a padding `mask` over the encoder positions (also taken from the Keras
      mask of `values`);
    * `normalize=True`: weight-normalised `v`, as TF-Addons'
      `BahdanauAttention(normalize=True)`;
    * the key term `W₂ h + b` is computed once per sequence with
      `precompute_keys(values)` and passed back as `precomputed_keys=`, so each
      decoder step costs `O(T · units)` instead of `O(T · units · d)`.

    It returns what `keras_attn.Attention` and Keras's attention layers return:
    the context, and `(context, weights)` with `return_attention_scores=True`
    (the source returned both always, its weights shaped `(B, T, 1)`). Its score
    is additive: `score=` and `use_scale=` are refused (`LuongAttention` and
    `Attention(score=...)` take other scores).

    Args:
        units: hidden size of the additive score.
        normalize: weight-normalise `v`.
        use_bias: add the bias `b` inside the `tanh`.
        dropout: dropout rate on the attention weights during training.
        kernel_initializer: initializer of `W₁`, `W₂` and `v`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: decoder state `(B, H)`, or `(B, Tq, H)` for several steps at once.
        values: encoder outputs `(B, T, H)`.
        mask: optional `(B, T)` boolean padding mask of `values`.
        precomputed_keys: optional `precompute_keys(values)`.
        return_attention_scores: also return the weights.
        training: whether dropout is active.

    Returns:
        The context `(B, H)` (`(B, Tq, H)` for a rank-3 query); with
        `return_attention_scores=True`, `(context, weights)` with weights `(B, T)`
        (`(B, Tq, T)`).

    Example:

    >>> attention = keras_attn.BahdanauAttention(units=10)
    >>> state = np.random.rand(4, 16).astype("float32")
    >>> encoder_outputs = np.random.rand(4, 7, 16).astype("float32")
    >>> keys = attention.precompute_keys(encoder_outputs)  # once per sequence
    >>> context, weights = attention(state, encoder_outputs, precomputed_keys=keys,
    ...                              return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((4, 16), (4, 7))
    """

    def __init__(
        self,
        units,
        normalize=False,
        use_bias=True,
        dropout=0.0,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        for name in ("score", "use_scale"):
            if name in kwargs:
                raise ValueError(
                    f"BahdanauAttention's score is additive, so `{name}` is not one of its "
                    f"arguments; received {name}={kwargs[name]!r}. LuongAttention and "
                    "Attention(score=...) take other scores.")
        super().__init__(
            score=AdditiveScore(
                units,
                use_bias=use_bias,
                normalize=normalize,
                kernel_initializer=kernel_initializer,
                dtype=kwargs.get("dtype"),
                name="additive_score",
            ),
            dropout=dropout,
            **kwargs,
        )
        self.units = int(units)
        self.normalize = bool(normalize)
        self.use_bias = bool(use_bias)

    def build(self, query_shape, values_shape):
        super().build(query_shape, values_shape)

    def call(self, query, values, mask=None, query_mask=None, values_mask=None,
             precomputed_keys=None, return_attention_scores=False, training=None):
        # The source text's argument names (`values`), Attention's behaviour.
        return super().call(query, values, mask=mask, query_mask=query_mask,
                            value_mask=values_mask, precomputed_keys=precomputed_keys,
                            return_attention_scores=return_attention_scores,
                            training=training)

    def get_config(self):
        config = super().get_config()
        score = self.score_layer
        for key in ("score", "use_scale", "seed"):
            config.pop(key)
        config.update(
            units=self.units,
            normalize=self.normalize,
            use_bias=self.use_bias,
            kernel_initializer=keras.initializers.serialize(score.kernel_initializer),
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
