import keras
import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import run_layer_contract, to_numpy


def test_contract_single_head_formula_shape(rng):
    x = rng.normal(size=(2, 7, 12)).astype("float32")
    run_layer_contract(
        keras_attn.SelfAttention, {"key_dim": 6}, {"inputs": x}, (2, 7, 6),
        expect_trainable_weights=5,  # W_q, b_q, W_k, W_v, b_v
    )


def test_contract_multi_head_causal_with_mask(rng):
    x = rng.normal(size=(2, 5, 12)).astype("float32")
    mask = np.array([[1] * 5, [1, 1, 1, 0, 0]], bool)
    run_layer_contract(
        keras_attn.SelfAttention,
        {"key_dim": 4, "num_heads": 3, "use_output_projection": True},
        {"inputs": x, "mask": mask},
        [(2, 5, 12), (2, 3, 5, 5)],
        call_kwargs={"use_causal_mask": True, "return_attention_scores": True},
    )


def test_matches_the_source_formula(rng):
    x = rng.normal(size=(2, 5, 12)).astype("float32")
    layer = keras_attn.SelfAttention(key_dim=6, use_bias=False)
    h = to_numpy(layer(x))
    wq = to_numpy(layer.query_dense.kernel)[:, 0]
    wk = to_numpy(layer.key_dense.kernel)[:, 0]
    wv = to_numpy(layer.value_dense.kernel)[:, 0]
    q, k, v = x @ wq, x @ wk, x @ wv
    s = q @ k.transpose(0, 2, 1) / np.sqrt(6)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    np.testing.assert_allclose(h, a @ v, rtol=1e-5, atol=1e-6)


def test_keras_padding_mask_and_positional_encodings_compose():
    tokens = keras.Input((None,), dtype="int32")
    emb = keras.layers.Embedding(20, 8, mask_zero=True)(tokens)
    x = keras.layers.Add()([emb, keras_attn.SinusoidalPositionEncoding()(emb)])
    bias = keras_attn.ALiBiBias(num_heads=2)(x)
    y, w = keras_attn.SelfAttention(key_dim=4, num_heads=2)(
        x, attention_bias=bias, return_attention_scores=True
    )
    model = keras.Model(tokens, [y, w])
    _, w = model(np.array([[4, 5, 6, 0], [7, 8, 0, 0]]))
    w = to_numpy(w)
    assert np.all(w[0, :, :, 3] == 0) and np.all(w[1, :, :, 2:] == 0)
    assert np.all(w[1, :, 2:] == 0)  # padded queries attend to nothing


def test_a_padding_mask_of_another_length_is_rejected(rng):
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    with pytest.raises(ValueError, match=r"`mask` must have shape \(2, 5\).*received `mask` of shape \(2, 6\)"):
        keras_attn.SelfAttention(8)(x, mask=np.ones((2, 6), bool))
