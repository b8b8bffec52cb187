"""keras-attn: attention and external-memory layers for Keras 3 (any backend)."""

__version__ = "0.1.0"

from keras_attn import decoding, efficient, memory, ops, scores
from keras_attn.attention import Attention
from keras_attn.bahdanau import BahdanauAttention
from keras_attn.efficient import LinearAttention, SparseAttention
from keras_attn.hard import HardAttention
from keras_attn.hierarchical import HierarchicalAttention
from keras_attn.local import LocalAttention
from keras_attn.luong import LuongAttention
from keras_attn.memory import (
    DenseAssociativeMemory,
    DNCCell,
    Hopfield,
    HopfieldLayer,
    HopfieldPooling,
    MemN2N,
    MemoryHop,
    ModernHopfield,
    NTMCell,
    ProductKeyMemory,
)
from keras_attn.monotonic import MonotonicAttention
from keras_attn.multi_head import MultiHeadAttention
from keras_attn.pointer import PointerAttention
from keras_attn.policy_gradient import PolicyGradient
from keras_attn.pooling import AttentionPooling
from keras_attn.positional import (
    ALiBiBias,
    LearnedPositionEmbedding,
    RotaryEmbedding,
    SinusoidalPositionEncoding,
)
from keras_attn.recurrent import AttentionWrapperCell
from keras_attn.scores import (
    AdditiveScore,
    AttentionScore,
    BilinearScore,
    ConcatScore,
    CosineScore,
    DotScore,
    ScaledDotScore,
)
from keras_attn.self_attention import SelfAttention
from keras_attn.structured import SegmentAttention


def registered_layers():
    """`{name: class}` of every layer this package registers with Keras."""
    import keras

    prefix = "keras_attn>"
    return {
        name[len(prefix):]: obj
        for name, obj in sorted(keras.saving.get_custom_objects().items())
        if name.startswith(prefix)
    }


__all__ = [
    "ALiBiBias",
    "AdditiveScore",
    "AttentionPooling",
    "AttentionWrapperCell",
    "Attention",
    "AttentionScore",
    "BahdanauAttention",
    "BilinearScore",
    "ConcatScore",
    "CosineScore",
    "DNCCell",
    "DenseAssociativeMemory",
    "DotScore",
    "HardAttention",
    "HierarchicalAttention",
    "SegmentAttention",
    "LearnedPositionEmbedding",
    "LinearAttention",
    "LocalAttention",
    "LuongAttention",
    "MemN2N",
    "MemoryHop",
    "ModernHopfield",
    "Hopfield",
    "HopfieldLayer",
    "HopfieldPooling",
    "MonotonicAttention",
    "MultiHeadAttention",
    "NTMCell",
    "PointerAttention",
    "PolicyGradient",
    "ProductKeyMemory",
    "RotaryEmbedding",
    "ScaledDotScore",
    "SelfAttention",
    "SinusoidalPositionEncoding",
    "SparseAttention",
    "decoding",
    "efficient",
    "memory",
    "ops",
    "registered_layers",
    "scores",
]
