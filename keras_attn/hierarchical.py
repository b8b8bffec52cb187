"""Hierarchical attention: words pooled into sentences, sentences into a document."""

import inspect

import keras
from keras import ops

from keras_attn import _validation
from keras_attn.pooling import AttentionPooling


@keras.saving.register_keras_serializable(package="keras_attn")
class HierarchicalAttention(keras.layers.Layer):
    """The two-level attention of Yang et al. 2016 (hierarchical attention network).

    "Hierarchical Attention Networks for Document Classification": a document is
    a sequence of sentences, a sentence a sequence of words, and attention is
    applied at both levels with a learned context vector each (`AttentionPooling`):

        `h_it = word_encoder(x_i)_t`,    `s_i = Σ_t α_it h_it`,  `α_it = softmax_t(u_itᵀ u_w)`
        `h_i  = sentence_encoder(s)_i`,  `v   = Σ_i α_i h_i`,    `α_i  = softmax_i(u_iᵀ u_s)`

    with `u = tanh(W h + b)` at each level. The paper's encoders are
    bidirectional GRUs; any layer mapping `(N, T, d)` to `(N, T, d')` fits (or
    none: the pooling then works on the inputs themselves).

    Masks: a `(B, S, W)` word mask (e.g. from `Embedding(mask_zero=True)` on
    `(B, S, W)` token ids) drops padded words; a sentence with no words left is
    dropped at the sentence level; a document with none gives a zero vector.

    Args:
        word_units: size of the word-level `u_it` and `u_w` (default: feature size).
        sentence_units: size of the sentence-level `u_i` and `u_s`.
        word_encoder: optional layer (or its serialized config) run over each
            sentence's words, given the word mask when its `call` takes `mask`.
        sentence_encoder: optional layer (or config) run over each document's
            sentences.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(B, S, W, d)` word features.
        mask: optional `(B, S, W)` word mask (also taken from the Keras mask).
        return_attention_scores: also return both levels' weights.
        training: passed to the encoders.

    Returns:
        The document vector `(B, d')`, and with `return_attention_scores=True`
        also the word weights `(B, S, W)` and the sentence weights `(B, S)`.

    Example:

    >>> words = np.random.rand(2, 3, 5, 8).astype("float32")
    >>> han = keras_attn.HierarchicalAttention(
    ...     word_encoder=keras.layers.Bidirectional(keras.layers.GRU(4, return_sequences=True)))
    >>> document, word_weights, sentence_weights = han(words, return_attention_scores=True)
    >>> tuple(document.shape), tuple(word_weights.shape), tuple(sentence_weights.shape)
    ((2, 8), (2, 3, 5), (2, 3))
    """

    def __init__(
        self,
        word_units=None,
        sentence_units=None,
        word_encoder=None,
        sentence_encoder=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        word_encoder = _encoder("word_encoder", word_encoder)
        sentence_encoder = _encoder("sentence_encoder", sentence_encoder)
        self.word_units = _validation.check_integer("word_units", word_units, allow_none=True)
        self.sentence_units = _validation.check_integer(
            "sentence_units", sentence_units, allow_none=True
        )
        self.word_encoder = word_encoder
        self.sentence_encoder = sentence_encoder
        self.word_attention = AttentionPooling(
            self.word_units, dtype=self.dtype_policy, name="word_attention"
        )
        self.sentence_attention = AttentionPooling(
            self.sentence_units, dtype=self.dtype_policy, name="sentence_attention"
        )
        self.supports_masking = True

    @staticmethod
    def _build_encoder(encoder, shape):
        if encoder is None:
            return shape
        if not encoder.built:
            encoder.build(shape)
        return tuple(encoder.compute_output_shape(shape))

    def build(self, inputs_shape):
        _validation.check_rank("inputs", inputs_shape, 4, self.name)
        _, sentences, words, features = inputs_shape
        word_shape = self._build_encoder(self.word_encoder, (None, words, features))
        self.word_attention.build(word_shape)
        sentence_shape = (None, sentences, word_shape[-1])
        self.sentence_attention.build(self._build_encoder(self.sentence_encoder, sentence_shape))

    @staticmethod
    def _encode(encoder, x, mask, training):
        if encoder is None:
            return x
        parameters = inspect.signature(encoder.call).parameters
        kwargs = {}
        if "mask" in parameters and mask is not None:
            kwargs["mask"] = mask
        if "training" in parameters:
            kwargs["training"] = training
        return encoder(x, **kwargs)

    def call(self, inputs, mask=None, return_attention_scores=False, training=None):
        _validation.check_rank("inputs", inputs.shape, 4, self.name)
        _validation.check_dtype("floating", self.name, inputs=inputs)
        _validation.check_mask("mask", mask, [tuple(inputs.shape[:3])], self.name)
        batch, sentences, words = ops.shape(inputs)[0], ops.shape(inputs)[1], ops.shape(inputs)[2]
        word_mask = None if mask is None else ops.reshape(ops.cast(mask, "bool"), (-1, words))
        sentence_words = ops.reshape(inputs, (-1, words, inputs.shape[-1]))
        encoded = self._encode(self.word_encoder, sentence_words, word_mask, training)
        sentence_vectors, word_weights = self.word_attention(
            encoded, mask=word_mask, return_attention_scores=True
        )
        sentence_vectors = ops.reshape(sentence_vectors, (batch, sentences, encoded.shape[-1]))
        sentence_mask = None if mask is None else ops.any(ops.cast(mask, "bool"), axis=-1)
        encoded = self._encode(self.sentence_encoder, sentence_vectors, sentence_mask, training)
        document, sentence_weights = self.sentence_attention(
            encoded, mask=sentence_mask, return_attention_scores=True
        )
        if return_attention_scores:
            return document, ops.reshape(word_weights, (batch, sentences, words)), sentence_weights
        return document

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        return {
            **super().get_config(),
            "word_units": self.word_units,
            "sentence_units": self.sentence_units,
            "word_encoder": keras.saving.serialize_keras_object(self.word_encoder),
            "sentence_encoder": keras.saving.serialize_keras_object(self.sentence_encoder),
        }


def _encoder(name, encoder):
    """A layer, `None`, or a serialized layer (as `get_config` writes it)."""
    if isinstance(encoder, dict):
        encoder = keras.saving.deserialize_keras_object(encoder)
    if encoder is not None and not isinstance(encoder, keras.layers.Layer):
        raise TypeError(
            f"`{name}` must be a keras.layers.Layer, its serialized config or None; "
            f"received {type(encoder).__name__}."
        )
    return encoder
