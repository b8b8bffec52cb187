"""Rotary position embedding (RoPE)."""

import keras
from keras import ops

from keras_attn import _validation


@keras.saving.register_keras_serializable(package="keras_attn")
class RotaryEmbedding(keras.layers.Layer):
    """Rotary position embedding of Su et al. 2021 ("RoFormer").

    Each feature pair `(x_i, x_{i+d/2})` at position `p` is rotated by the angle
    `p · θ_i`, `θ_i = w^{-2i/d}`:

        x'_i       = x_i cos(pθ_i) − x_{i+d/2} sin(pθ_i)
        x'_{i+d/2} = x_{i+d/2} cos(pθ_i) + x_i sin(pθ_i)

    Applied to queries and keys, `q'_mᵀ k'_n` depends on `m − n` only: attention
    sees relative positions with no extra parameters. This is the half-split
    pairing of GPT-NeoX and keras-hub.

    Args:
        max_wavelength: the base `w` (10000 in the paper).
        scaling_factor: positions are divided by it (linear position
            interpolation for longer contexts).
        sequence_axis: the position axis of the input (2 for `(B, heads, T, d)`).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor whose last axis (of even size) is rotated.
        start_index: position of the first step.

    Returns:
        The rotated tensor, same shape and dtype.

    Example:

    >>> q = np.random.rand(2, 6, 8).astype("float32")
    >>> tuple(keras_attn.RotaryEmbedding()(q).shape)
    (2, 6, 8)
    """

    def __init__(self, max_wavelength=10000.0, scaling_factor=1.0, sequence_axis=1, **kwargs):
        super().__init__(**kwargs)
        self.max_wavelength = _validation.check_number("max_wavelength", max_wavelength)
        self.scaling_factor = _validation.check_number("scaling_factor", scaling_factor)
        self.sequence_axis = _validation.check_integer("sequence_axis", sequence_axis, least=None)
        self.supports_masking = True

    def call(self, inputs, start_index=0):
        _validation.check_dtype("floating", self.name, inputs=inputs)
        depth = inputs.shape[-1]
        if depth is None or depth % 2:
            raise ValueError(
                f"{self.name}: the last axis of `inputs` must have an even size; "
                f"received shape {tuple(inputs.shape)}."
            )
        rank = len(inputs.shape)
        if not -rank <= self.sequence_axis < rank or self.sequence_axis % rank == rank - 1:
            raise ValueError(
                f"{self.name}: `sequence_axis={self.sequence_axis}` must be an axis of "
                "`inputs` other than the last (the rotated features); received `inputs` "
                f"of shape {tuple(inputs.shape)}."
            )
        axis = self.sequence_axis % rank
        length = ops.shape(inputs)[axis]
        positions = (
            ops.cast(ops.arange(length), "float32") + ops.cast(start_index, "float32")
        ) / self.scaling_factor
        inverse_frequency = ops.power(
            self.max_wavelength, -ops.cast(ops.arange(0, depth, 2), "float32") / depth
        )
        angles = ops.expand_dims(positions, 1) * ops.expand_dims(inverse_frequency, 0)
        angles = ops.concatenate([angles, angles], axis=-1)
        # (T, d) → broadcastable to the input: T on `axis`, d last.
        shape = [1] * rank
        shape[axis], shape[-1] = -1, depth
        cos = ops.cast(ops.reshape(ops.cos(angles), shape), inputs.dtype)
        sin = ops.cast(ops.reshape(ops.sin(angles), shape), inputs.dtype)
        first, second = ops.split(inputs, 2, axis=-1)
        rotated_half = ops.concatenate([-second, first], axis=-1)
        return inputs * cos + rotated_half * sin

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {
            **super().get_config(),
            "max_wavelength": self.max_wavelength,
            "scaling_factor": self.scaling_factor,
            "sequence_axis": self.sequence_axis,
        }
