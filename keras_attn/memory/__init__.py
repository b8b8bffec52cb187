"""External memories read and written by attention (one module per mechanism)."""

from keras_attn.memory import addressing
from keras_attn.memory.associative import DenseAssociativeMemory
from keras_attn.memory.hopfield import ModernHopfield
from keras_attn.memory.memn2n import MemN2N, MemoryHop, position_encoding_weights
from keras_attn.memory.ntm import NTMCell

__all__ = [
    "DenseAssociativeMemory",
    "MemN2N",
    "MemoryHop",
    "ModernHopfield",
    "NTMCell",
    "addressing",
    "position_encoding_weights",
]
