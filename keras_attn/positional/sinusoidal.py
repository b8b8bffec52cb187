"""Fixed sinusoidal position encoding."""

import keras
from keras import ops

from keras_attn import _validation


def sinusoid_table(length, depth, max_wavelength=10000.0, start_index=0, dtype="float32"):
    """`PE[p, 2i] = sin(p / w^{2i/d})`, `PE[p, 2i+1] = cos(p / w^{2i/d})`, `(length, depth)`."""
    positions = ops.cast(ops.arange(length), "float32") + ops.cast(start_index, "float32")
    pair = ops.cast(ops.arange(depth) // 2, "float32")
    inverse_frequency = ops.power(
        ops.cast(max_wavelength, "float32"), -2.0 * pair / float(depth)
    )
    angles = ops.expand_dims(positions, 1) * ops.expand_dims(inverse_frequency, 0)
    is_even = ops.equal(ops.arange(depth) % 2, 0)
    return ops.cast(ops.where(is_even, ops.sin(angles), ops.cos(angles)), dtype)


@keras.saving.register_keras_serializable(package="keras_attn")
class SinusoidalPositionEncoding(keras.layers.Layer):
    """Sinusoidal position encoding of Vaswani et al. 2017, §3.5.

    `PE(p, 2i) = sin(p / 10000^{2i/d})`, `PE(p, 2i+1) = cos(p / 10000^{2i/d})`:
    every frequency pair makes `PE(p + k)` a fixed rotation of `PE(p)`, so a
    linear map can attend by relative offset. Returns the encoding (broadcast to
    the input's shape) to be added to the embeddings, as keras-hub does.

    Args:
        max_wavelength: the base `10000` of the geometric wavelength series.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(B, T, d)` embeddings (only the shape is used).
        start_index: position of the first step (for step-by-step decoding).

    Returns:
        `(B, T, d)` encoding in the input's dtype.

    Example:

    >>> x = np.zeros((2, 5, 8), "float32")
    >>> encoding = ops.convert_to_numpy(keras_attn.SinusoidalPositionEncoding()(x))
    >>> y = x + encoding
    >>> float(y[0, 0, 1])  # cos(0)
    1.0
    """

    def __init__(self, max_wavelength=10000.0, **kwargs):
        super().__init__(**kwargs)
        self.max_wavelength = _validation.check_number("max_wavelength", max_wavelength)
        self.supports_masking = True

    def call(self, inputs, start_index=0):
        _validation.check_rank("inputs", inputs.shape, 3, self.name)
        _validation.check_dtype("floating", self.name, inputs=inputs)
        shape = ops.shape(inputs)
        table = sinusoid_table(
            shape[1], inputs.shape[-1], self.max_wavelength, start_index, self.compute_dtype
        )
        return ops.broadcast_to(table, shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "max_wavelength": self.max_wavelength}
