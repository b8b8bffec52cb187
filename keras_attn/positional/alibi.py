"""Attention with linear biases (ALiBi)."""

import math

import keras
from keras import ops

from keras_attn import _validation


def alibi_slopes(num_heads):
    """Head slopes `m_h` of Press et al. 2022: `2^{-8h/n}` for `n` a power of two.

    Otherwise the slopes of the nearest smaller power of two, then every other
    slope of the next power of two, as in the paper's reference code.
    """
    def powers_of_two(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]

    if math.log2(num_heads).is_integer():
        return powers_of_two(num_heads)
    lower = 2 ** math.floor(math.log2(num_heads))
    return powers_of_two(lower) + powers_of_two(2 * lower)[0::2][: num_heads - lower]


@keras.saving.register_keras_serializable(package="keras_attn")
class ALiBiBias(keras.layers.Layer):
    """Linear position bias of Press, Smith & Lewis 2022 ("Train Short, Test Long").

    Adds `−m_h · |i − j|` to the score of query `i` and key `j` in head `h`, with
    fixed geometric slopes `m_h`; no position embeddings are needed and the bias
    extends to any length. Queries are aligned with the last keys (query `i` sits
    at key position `Tk − Tq + i`), which covers self-attention and step-by-step
    decoding alike. Pass the result as `attention_bias=` (for the single-head
    `Attention`, use `num_heads=1` and `bias[:, 0]`).

    Args:
        num_heads: number of heads (one slope each).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: `(B, Tq, ...)`, only its length is used.
        key: optional `(B, Tk, ...)`; defaults to `query`.

    Returns:
        `(1, num_heads, Tq, Tk)` bias.

    Example:

    >>> x = np.zeros((2, 4, 8), "float32")
    >>> bias = keras_attn.ALiBiBias(num_heads=2)(x)
    >>> tuple(bias.shape), float(bias[0, 0, 3, 0])  # slope 1/16, distance 3
    ((1, 2, 4, 4), -0.1875)
    """

    def __init__(self, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = _validation.check_integer("num_heads", num_heads)
        # Accepts masked inputs; the bias itself carries no mask.
        self.supports_masking = True

    def compute_mask(self, query, previous_mask=None):
        return None

    def call(self, query, key=None):
        _validation.check_rank("query", query.shape, (2, 3, 4), self.name)
        key = query if key is None else key
        query_length, key_length = ops.shape(query)[1], ops.shape(key)[1]
        query_positions = ops.arange(query_length) + (key_length - query_length)
        distance = ops.abs(
            ops.expand_dims(query_positions, 1) - ops.expand_dims(ops.arange(key_length), 0)
        )
        slopes = ops.reshape(
            ops.convert_to_tensor(alibi_slopes(self.num_heads), "float32"), (-1, 1, 1)
        )
        bias = -slopes * ops.expand_dims(ops.cast(distance, "float32"), 0)
        return ops.cast(ops.expand_dims(bias, 0), self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads}
