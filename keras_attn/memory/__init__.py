"""External memories read and written by attention (one module per mechanism)."""

from keras_attn.memory import addressing, dnc
from keras_attn.memory.associative import DenseAssociativeMemory
from keras_attn.memory.dnc import DNCCell
from keras_attn.memory.hopfield import ModernHopfield
from keras_attn.memory.hopfield_layers import Hopfield, HopfieldLayer, HopfieldPooling
from keras_attn.memory.memn2n import MemN2N, MemoryHop, position_encoding_weights
from keras_attn.memory.ntm import NTMCell
from keras_attn.memory.product_key import ProductKeyMemory

__all__ = [
    "DNCCell",
    "DenseAssociativeMemory",
    "Hopfield",
    "HopfieldLayer",
    "HopfieldPooling",
    "MemN2N",
    "MemoryHop",
    "ModernHopfield",
    "NTMCell",
    "ProductKeyMemory",
    "addressing",
    "dnc",
    "position_encoding_weights",
]
