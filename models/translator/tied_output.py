"""`TiedOutput`: logits from the target embedding itself (tied input and output embeddings)."""

import keras
from keras import ops

from keras_attn import _validation


@keras.saving.register_keras_serializable(package="keras_attn_models")
class TiedOutput(keras.layers.Layer):
    """Output logits that reuse the decoder's input embedding as the softmax weights.

    Press & Wolf (2017, "Using the Output Embedding to Improve Language Models")
    tie a decoder's input embedding `E` (`V × d`) to its output layer: for a
    decoder state `h_t` projected to the embedding's size,

        logits_t = h_t Eᵀ + b,

    so every target word has one vector that both reads and writes it: half the
    embedding parameters, and a rare word's output row learns from its uses as an
    input too, which Sennrich & Zhang (2019) count among the settings that help
    low-resource translation most. The layer owns only the bias `b`; `E` is given
    at each call, so the embedding stays a single variable of its own layer.

    Args:
        vocab_size: `V`, the number of logits.
        **kwargs: standard `keras.layers.Layer` arguments (`dtype="float32"`
            keeps the logits in float32 under mixed precision).

    Call arguments:
        inputs: `(..., d)` decoder states, already of the embedding's size.
        embeddings: the `(V, d)` embedding matrix.

    Returns:
        `(..., V)` logits.

    Example:

    >>> import numpy as np
    >>> from keras_attn.models.translator import TiedOutput
    >>> embedding = keras.layers.Embedding(10, 4)
    >>> embedding.build((None,))
    >>> tuple(TiedOutput(10)(np.ones((2, 3, 4), "float32"), embedding.embeddings).shape)
    (2, 3, 10)
    """

    def __init__(self, vocab_size, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = _validation.check_integer("vocab_size", vocab_size, 1)

    def build(self, inputs_shape, embeddings_shape=None):
        self.bias = self.add_weight(shape=(self.vocab_size,), initializer="zeros", name="bias")

    def call(self, inputs, embeddings):
        if tuple(embeddings.shape)[0] not in (None, self.vocab_size):
            raise ValueError(
                f"{self.name}: `embeddings` must have {self.vocab_size} rows, one per "
                f"token; received shape {tuple(embeddings.shape)}.")
        inputs = ops.cast(inputs, self.compute_dtype)
        weights = ops.cast(embeddings, self.compute_dtype)
        return ops.matmul(inputs, ops.transpose(weights)) + self.bias

    def compute_output_shape(self, inputs_shape, embeddings_shape=None):
        return (*inputs_shape[:-1], self.vocab_size)

    def get_config(self):
        return {**super().get_config(), "vocab_size": self.vocab_size}
