"""Efficient attention: mechanisms that avoid the full `T × T` score matrix."""

from keras_attn.efficient.linear import LinearAttention
from keras_attn.efficient.sparse import SparseAttention

__all__ = ["LinearAttention", "SparseAttention"]
