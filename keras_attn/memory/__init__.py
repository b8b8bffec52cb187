"""External memories read and written by attention (one module per mechanism)."""

from keras_attn.memory.memn2n import MemN2N, MemoryHop, position_encoding_weights

__all__ = ["MemN2N", "MemoryHop", "position_encoding_weights"]
