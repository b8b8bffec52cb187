"""Where Keras has the same mechanism, copied weights give the same numbers (≤ 1e-5)."""

import keras
import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import to_numpy

ATOL = 1e-5


def _max_diff(a, b):
    return float(np.max(np.abs(to_numpy(a) - to_numpy(b))))


@pytest.mark.parametrize("causal", [False, True])
def test_luong_dot_equals_keras_attention(rng, causal):
    q = rng.normal(size=(3, 4, 8)).astype("float32")
    v = rng.normal(size=(3, 6, 8)).astype("float32")
    k = rng.normal(size=(3, 6, 8)).astype("float32")
    q_mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0]], bool)
    v_mask = np.array([[1] * 6, [1] * 4 + [0] * 2, [1] * 2 + [0] * 4], bool)
    ours, our_w = keras_attn.LuongAttention(score="dot")(
        q, v, k, mask=[q_mask, v_mask], use_causal_mask=causal, return_attention_scores=True
    )
    theirs, their_w = keras.layers.Attention()(
        [q, v, k], mask=[q_mask, v_mask], use_causal_mask=causal, return_attention_scores=True
    )
    assert _max_diff(ours, theirs) <= ATOL
    # Keras spreads a padded query's weights anyway; compare the real queries.
    assert _max_diff(to_numpy(our_w)[q_mask], to_numpy(their_w)[q_mask]) <= ATOL


def test_additive_score_equals_keras_additive_attention(rng):
    d = 8
    q = rng.normal(size=(2, 3, d)).astype("float32")
    v = rng.normal(size=(2, 5, d)).astype("float32")
    v_mask = np.array([[1] * 5, [1, 1, 0, 0, 0]], bool)
    theirs_layer = keras.layers.AdditiveAttention(use_scale=True)
    theirs, their_w = theirs_layer([q, v], mask=[None, v_mask], return_attention_scores=True)

    score = keras_attn.AdditiveScore(units=d, use_bias=False)
    ours_layer = keras_attn.Attention(score=score)
    ours_layer(q, v)  # build
    score.query_projection.kernel.assign(np.eye(d, dtype="float32"))
    score.key_projection.kernel.assign(np.eye(d, dtype="float32"))
    score.v.assign(to_numpy(theirs_layer.scale))
    ours, our_w = ours_layer(q, v, mask=v_mask, return_attention_scores=True)
    assert _max_diff(ours, theirs) <= ATOL
    assert _max_diff(our_w, their_w) <= ATOL
    raw = score(q, v)
    expected = np.sum(to_numpy(theirs_layer.scale) * np.tanh(q[:, :, None] + v[:, None]), -1)
    assert _max_diff(raw, expected) <= ATOL


def _copy_mha_weights(theirs, ours, key_bias_noise=None):
    # Same kernels; our head-major layout stores a bias as (heads, 1, dim).
    ours.query_dense.kernel.assign(theirs.query_dense.kernel)
    ours.query_dense.bias.assign(to_numpy(theirs.query_dense.bias)[:, None])
    ours.key_dense.kernel.assign(theirs.key_dense.kernel)
    ours.value_dense.kernel.assign(theirs.value_dense.kernel)
    ours.value_dense.bias.assign(to_numpy(theirs.value_dense.bias)[:, None])
    ours.output_dense.kernel.assign(theirs.output_dense.kernel)
    ours.output_dense.bias.assign(theirs.output_dense.bias)
    if key_bias_noise is not None:
        # Our layer has no key bias; a non-zero one in Keras changes nothing.
        theirs.key_dense.bias.assign(key_bias_noise)


@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_equals_keras_multi_head(rng, causal):
    q = rng.normal(size=(2, 6, 16)).astype("float32")
    v = rng.normal(size=(2, 6, 12)).astype("float32")
    k = rng.normal(size=(2, 6, 10)).astype("float32")
    v_mask = np.array([[1] * 6, [1] * 4 + [0] * 2], bool)
    # value_dim == key_dim: Keras's fused JAX path rejects differing sizes.
    kwargs = dict(num_heads=4, key_dim=5)
    theirs = keras.layers.MultiHeadAttention(**kwargs)
    ours = keras_attn.MultiHeadAttention(**kwargs)
    theirs(q, v, k)
    ours(q, v, k)
    rng_bias = rng.normal(size=(4, 5)).astype("float32")
    _copy_mha_weights(theirs, ours, key_bias_noise=rng_bias)
    out_t, w_t = theirs(q, v, k, value_mask=v_mask, use_causal_mask=causal, return_attention_scores=True)
    out_o, w_o = ours(q, v, k, value_mask=v_mask, use_causal_mask=causal, return_attention_scores=True)
    assert _max_diff(out_o, out_t) <= ATOL
    assert _max_diff(w_o, w_t) <= ATOL
    # An explicit (B, Tq, Tk) mask (Keras: attention_mask) gives the same too.
    attn_mask = rng.random((2, 6, 6)) > 0.3
    attn_mask[..., 0] = True  # no empty rows: Keras would spread those uniformly
    out_t = theirs(q, v, k, attention_mask=attn_mask, use_causal_mask=causal)
    out_o = ours(q, v, k, mask=attn_mask, use_causal_mask=causal)
    assert _max_diff(out_o, out_t) <= ATOL
