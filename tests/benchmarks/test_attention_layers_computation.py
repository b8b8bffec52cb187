"""Case (b) of the layer benchmark times the same computation twice.

Our dot attention and `keras.layers.Attention` build the same forward+backward
step, so their time ratio can only move by the machine's noise. The benchmark
checks that with `computation`; these tests check `computation` itself.
"""

import os
import sys

import pytest

tf = pytest.importorskip("tensorflow")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import attention_layers  # noqa: E402

import keras_attn  # noqa: E402


@pytest.fixture
def inputs(rng):
    return (
        tf.constant(rng.normal(size=(4, 5, 8)).astype("float32")),
        tf.constant(rng.normal(size=(4, 6, 8)).astype("float32")),
    )


def _computation(layer, inputs, jit):
    return attention_layers.computation(attention_layers.train_step_fn(layer, inputs, jit), jit)


@pytest.mark.parametrize("jit", [False, True])
def test_dot_attention_is_the_same_computation_as_keras(inputs, jit):
    ours = _computation(keras_attn.LuongAttention(score="dot"), inputs, jit)
    theirs = _computation(attention_layers.KerasDotAttention(), inputs, jit)
    assert ours == theirs
    assert sum(ours.values()) > 10  # a whole step, not an empty graph


@pytest.mark.parametrize("jit", [False, True])
def test_one_more_operation_is_a_different_computation(inputs, jit):
    dot = _computation(keras_attn.Attention(score="dot"), inputs, jit)
    scaled = _computation(keras_attn.Attention(score="scaled_dot"), inputs, jit)
    assert dot != scaled


def test_other_shapes_are_a_different_computation(inputs, rng):
    query, values = inputs
    longer = tf.constant(rng.normal(size=(4, 7, 8)).astype("float32"))
    layer = keras_attn.LuongAttention(score="dot")
    assert _computation(layer, (query, values), False) != _computation(layer, (query, longer), False)
