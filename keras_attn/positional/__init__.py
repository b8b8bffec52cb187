"""Positional information for attention: additive encodings, rotations and biases."""

from keras_attn.positional.alibi import ALiBiBias
from keras_attn.positional.learned import LearnedPositionEmbedding
from keras_attn.positional.rotary import RotaryEmbedding
from keras_attn.positional.sinusoidal import SinusoidalPositionEncoding

__all__ = [
    "ALiBiBias",
    "LearnedPositionEmbedding",
    "RotaryEmbedding",
    "SinusoidalPositionEncoding",
]
