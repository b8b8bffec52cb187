"""Weights that share an initializer start from different draws."""

import keras
import numpy as np

import keras_attn
from keras_attn import _initializers
from tests.keras_attn.contract import to_numpy


def test_fresh_clones_draw_anew_and_seeded_clones_stay_reproducible():
    unseeded = keras.initializers.RandomNormal(stddev=0.1)
    a, b = (to_numpy(_initializers.fresh(unseeded, i)((4, 3))) for i in (0, 1))
    assert not np.allclose(a, b)
    seeded = keras.initializers.GlorotUniform(seed=7)
    first = [to_numpy(_initializers.fresh(seeded, i)((4, 3))) for i in (0, 1)]
    again = [to_numpy(_initializers.fresh(seeded, i)((4, 3))) for i in (0, 1)]
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.allclose(first[0], first[1])


def test_attention_projections_start_different():
    x = np.random.default_rng(0).random((1, 3, 8)).astype("float32")
    mha = keras_attn.MultiHeadAttention(num_heads=2, key_dim=4)
    mha(x, x)
    kernels = [to_numpy(w) for w in mha.weights if w.path.endswith("kernel")]
    assert len(kernels) == 4
    assert not np.allclose(kernels[0], kernels[1]) and not np.allclose(kernels[1], kernels[2])
    additive = keras_attn.AdditiveScore(units=8)
    additive(x, x)
    w = {v.path.split("/")[-2] if "projection" in v.path else v.name: to_numpy(v)
         for v in additive.weights}
    assert not np.allclose(w["query_projection"], w["key_projection"])
    assert not np.allclose(w["query_projection"][0], w["v"])
    pooling = keras_attn.AttentionPooling(units=8)
    pooling(x)
    assert not np.allclose(to_numpy(pooling.projection.kernel)[:, 0],
                           to_numpy(pooling.context_vector)[:, 0])
