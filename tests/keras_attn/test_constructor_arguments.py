"""Every size and rate a layer takes is checked where it is given.

A float size would be truncated by `int()`, a bool taken for 1, a NumPy integer
stored raw (then `get_config` is not JSON); a zero or negative rate gives NaNs
or nonsense far from the cause. Each must raise a `ValueError` naming the
argument instead.
"""

import json

import keras
import numpy as np
import pytest

import keras_attn
from keras_attn import efficient, memory, positional

# (layer, the other arguments it needs, the argument, a valid value)
INTEGER_ARGUMENTS = [
    (positional.ALiBiBias, {}, "num_heads", 4),
    (keras_attn.scores.AdditiveScore, {}, "units", 8),
    (keras_attn.AttentionPooling, {}, "units", 8),
    (keras_attn.BahdanauAttention, {}, "units", 8),
    (keras_attn.scores.ConcatScore, {}, "hidden_units", 8),
    (memory.DNCCell, {"units": 4}, "memory_size", 8),
    (memory.DenseAssociativeMemory, {}, "sweeps", 3),
    (keras_attn.HierarchicalAttention, {}, "word_units", 8),
    (keras_attn.HierarchicalAttention, {}, "sentence_units", 8),
    (positional.LearnedPositionEmbedding, {}, "sequence_length", 8),
    (efficient.LinearAttention, {"num_heads": 2, "key_dim": 4}, "chunk_size", 8),
    (keras_attn.LocalAttention, {"window": 2}, "position_units", 4),
    (keras_attn.LuongAttention, {"score": "concat"}, "units", 8),
    (memory.MemN2N, {"vocab_size": 10}, "embedding_dim", 8),
    (memory.ModernHopfield, {}, "key_dim", 4),
    (keras_attn.MonotonicAttention, {}, "units", 8),
    (keras_attn.MultiHeadAttention, {"num_heads": 2}, "key_dim", 4),
    (keras_attn.MultiHeadAttention, {"num_heads": 2, "key_dim": 4}, "value_dim", 4),
    (keras_attn.MultiHeadAttention, {"num_heads": 2, "key_dim": 4}, "output_shape", 6),
    (memory.NTMCell, {"units": 4}, "memory_size", 8),
    (keras_attn.PointerAttention, {}, "units", 8),
    (memory.ProductKeyMemory, {"num_keys": 8, "key_dim": 4}, "top_k", 2),
    (keras_attn.SelfAttention, {"key_dim": 4}, "num_heads", 2),
    (efficient.SparseAttention, {"num_heads": 2, "key_dim": 4}, "window", 2),
]

# (layer, the other arguments it needs, the argument, a valid value, expected)
NUMBER_ARGUMENTS = [
    (keras_attn.scores.CosineScore, {}, "beta", 2.0, "a number ≥ 0"),
    (keras_attn.scores.CosineScore, {}, "epsilon", 1e-6, "a number > 0"),
    (keras_attn.HardAttention, {}, "temperature", 0.5, "a number > 0"),
    (keras_attn.LuongAttention, {}, "dropout", 0.1, r"a number in \[0, 1\)"),
    (keras_attn.MultiHeadAttention, {"num_heads": 2, "key_dim": 4}, "dropout", 0.1,
     r"a number in \[0, 1\)"),
    (keras_attn.MultiHeadAttention, {"num_heads": 2, "key_dim": 4}, "rope_max_wavelength",
     100.0, "a number > 0 or None"),
    (keras_attn.MonotonicAttention, {}, "sigmoid_noise", 1.0, "a number ≥ 0"),
    (memory.ModernHopfield, {}, "beta", 1.0, "a number > 0 or None"),
    (memory.NTMCell, {"units": 4}, "clip_value", 5.0, "a number > 0 or None"),
    (memory.NTMCell, {"units": 4}, "memory_init_value", -0.5, "a finite number"),
    (memory.NTMCell, {"units": 4}, "state_gradient_clip", 10.0, "a number > 0 or None"),
    (memory.DNCCell, {"units": 4}, "clip_value", 5.0, "a number > 0 or None"),
    (positional.RotaryEmbedding, {}, "max_wavelength", 100.0, "a number > 0"),
    (positional.RotaryEmbedding, {}, "scaling_factor", 2.0, "a number > 0"),
    (positional.SinusoidalPositionEncoding, {}, "max_wavelength", 100.0, "a number > 0"),
]


def _name(param):
    return param.__name__ if isinstance(param, type) else None


@pytest.mark.parametrize("layer_class, others, argument, valid", INTEGER_ARGUMENTS, ids=_name)
@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "8"], ids=repr)
def test_bad_integer_argument_is_named(layer_class, others, argument, valid, bad):
    with pytest.raises(ValueError, match=f"`{argument}` must be a positive integer"):
        layer_class(**others, **{argument: bad})


@pytest.mark.parametrize("layer_class, others, argument, valid", INTEGER_ARGUMENTS, ids=_name)
def test_numpy_integer_argument_is_stored_as_int(layer_class, others, argument, valid):
    layer = layer_class(**others, **{argument: np.int64(valid)})
    config = layer.get_config()
    assert type(config[argument]) is int and config[argument] == valid
    json.dumps(config)


@pytest.mark.parametrize(
    "layer_class, others, argument, valid, expected", NUMBER_ARGUMENTS, ids=_name
)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "1", True], ids=repr)
def test_bad_number_argument_is_named(layer_class, others, argument, valid, expected, bad):
    with pytest.raises(ValueError, match=f"`{argument}` must be {expected}; received"):
        layer_class(**others, **{argument: bad})
    assert layer_class(**others, **{argument: valid}).get_config()[argument] == valid


@pytest.mark.parametrize(
    "layer_class, others, argument, valid, expected",
    [case for case in NUMBER_ARGUMENTS if case[-1] != "a finite number"],
    ids=_name,
)
def test_number_below_its_bound_is_named(layer_class, others, argument, valid, expected):
    with pytest.raises(ValueError, match=f"`{argument}` must be {expected}; received -1.0"):
        layer_class(**others, **{argument: -1.0})


def test_rotary_sequence_axis_must_be_an_integer():
    with pytest.raises(ValueError, match=r"`sequence_axis` must be an integer; received 1\.0"):
        positional.RotaryEmbedding(sequence_axis=1.0)
    assert positional.RotaryEmbedding(sequence_axis=np.int64(-2)).sequence_axis == -2


def test_attention_wrapper_layer_size_is_checked():
    cell, attention = keras.layers.GRUCell(4), keras_attn.BahdanauAttention(4)
    with pytest.raises(ValueError, match="`attention_layer_size` must be a positive integer"):
        keras_attn.AttentionWrapperCell(cell, attention, memory_size=4, attention_layer_size=0)
