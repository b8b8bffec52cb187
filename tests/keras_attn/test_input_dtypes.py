"""Inputs of the wrong dtype kind raise a `TypeError` naming the argument and dtype.

Integer features used to fail deep inside the backend (a softmax over int32) or,
for the positional layers, come back silently truncated to integers; float token
ids for MemN2N were silently cast.
"""

import keras
import numpy as np
import pytest

import keras_attn
from keras_attn import efficient, memory, positional

RNG = np.random.default_rng(0)
Q = RNG.normal(size=(2, 3, 8)).astype("float32")
K = RNG.normal(size=(2, 5, 8)).astype("float32")

# (layer factory, inputs as a dict, the argument given as integers)
CASES = [
    (lambda: keras_attn.Attention(), {"query": Q, "value": K}, "value"),
    (lambda: keras_attn.BahdanauAttention(4), {"query": Q[:, 0], "values": K}, "query"),
    (lambda: keras_attn.LuongAttention("general"), {"query": Q, "value": K}, "query"),
    (lambda: keras_attn.LocalAttention(1), {"query": Q, "value": K}, "query"),
    (lambda: keras_attn.HardAttention(), {"query": Q, "value": K}, "value"),
    (lambda: keras_attn.MultiHeadAttention(2, 4), {"query": Q, "value": K}, "value"),
    (lambda: keras_attn.SelfAttention(4), {"inputs": Q}, "inputs"),
    (lambda: efficient.LinearAttention(2, 4), {"query": Q, "value": K}, "query"),
    (lambda: efficient.SparseAttention(2, 4, window=2), {"query": K, "value": K}, "query"),
    (lambda: keras_attn.PointerAttention(4), {"query": Q[:, 0], "keys": K}, "keys"),
    (lambda: memory.ModernHopfield(), {"state": Q, "stored": K}, "stored"),
    (lambda: memory.ProductKeyMemory(8, top_k=2, key_dim=4), {"inputs": Q}, "inputs"),
    (lambda: keras_attn.AttentionPooling(), {"inputs": Q}, "inputs"),
    (lambda: keras_attn.HierarchicalAttention(), {"inputs": Q.reshape(2, 3, 2, 4)}, "inputs"),
    (lambda: positional.SinusoidalPositionEncoding(), {"inputs": Q}, "inputs"),
    (lambda: positional.RotaryEmbedding(), {"inputs": Q}, "inputs"),
    (lambda: positional.LearnedPositionEmbedding(3), {"inputs": Q}, "inputs"),
]


@pytest.mark.parametrize("make, inputs, argument", CASES, ids=lambda c: c if isinstance(c, str) else None)
def test_integer_features_are_refused_by_name(make, inputs, argument):
    bad = {**inputs, argument: np.round(inputs[argument] * 3).astype("int32")}
    with pytest.raises(TypeError, match=f"`{argument}` must be a floating-point tensor; "
                                        "received dtype int32"):
        make()(**bad)
    assert np.all(np.isfinite(keras.ops.convert_to_numpy(_first(make()(**inputs)))))


def _first(output):
    return output[0] if isinstance(output, (list, tuple)) else output


def test_memn2n_refuses_float_token_ids():
    layer = memory.MemN2N(10, memory_size=5)
    story, question = RNG.integers(1, 10, (2, 5, 4)), RNG.integers(1, 10, (2, 4))
    with pytest.raises(TypeError, match=r"`story` must be an integer tensor; received dtype float32"):
        layer(story.astype("float32"), question)
    assert _first(layer(story, question)).shape[0] == 2
