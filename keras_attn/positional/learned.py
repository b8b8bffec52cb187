"""Learned absolute position embedding."""

import keras
from keras import ops

from keras_attn import _validation


@keras.saving.register_keras_serializable(package="keras_attn")
class LearnedPositionEmbedding(keras.layers.Layer):
    """A trained vector `P[p]` for every position `p < sequence_length`.

    The absolute position embedding of Gehring et al. 2017 and BERT; returns
    `P[start_index : start_index + T]` broadcast to the input, to be added to the
    token embeddings. Unlike the sinusoidal encoding it cannot extrapolate, so a
    longer input is an error.

    Args:
        sequence_length: the most positions the layer can embed.
        initializer: initializer of `P`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(B, T, d)` embeddings (only the shape is used).
        start_index: position of the first step.

    Returns:
        `(B, T, d)` position embeddings.

    Example:

    >>> x = np.zeros((2, 5, 8), "float32")
    >>> tuple(keras_attn.LearnedPositionEmbedding(sequence_length=16)(x).shape)
    (2, 5, 8)
    """

    def __init__(self, sequence_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.sequence_length = _validation.check_integer("sequence_length", sequence_length)
        self.initializer = keras.initializers.get(initializer)
        self.supports_masking = True

    def build(self, input_shape):
        _validation.check_rank("inputs", input_shape, 3, self.name)
        self.position_embeddings = self.add_weight(
            name="embeddings",
            shape=(self.sequence_length, input_shape[-1]),
            initializer=self.initializer,
        )

    def call(self, inputs, start_index=0):
        _validation.check_rank("inputs", inputs.shape, 3, self.name)
        _validation.check_dtype("floating", self.name, inputs=inputs)
        length = inputs.shape[1]
        if length is not None and isinstance(start_index, int):
            if start_index + length > self.sequence_length:
                raise ValueError(
                    f"{self.name}: positions {start_index}..{start_index + length - 1} "
                    f"exceed `sequence_length={self.sequence_length}`; received inputs "
                    f"of shape {tuple(inputs.shape)}."
                )
        shape = ops.shape(inputs)
        table = ops.slice(
            ops.convert_to_tensor(self.position_embeddings),
            (start_index, 0),
            (shape[1], inputs.shape[-1]),
        )
        return ops.broadcast_to(ops.cast(table, self.compute_dtype), shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {
            **super().get_config(),
            "sequence_length": self.sequence_length,
            "initializer": keras.initializers.serialize(self.initializer),
        }
