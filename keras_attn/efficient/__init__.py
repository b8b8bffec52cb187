"""Efficient attention: mechanisms that avoid the full `T × T` score matrix."""

from keras_attn.efficient.linear import LinearAttention

__all__ = ["LinearAttention"]
