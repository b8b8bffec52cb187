import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from keras import ops

from keras_attn import ops as attn_ops
from tests.keras_attn.contract import input_gradient, to_numpy


def _reference_masked_softmax(scores, mask):
    scores = np.where(mask, scores.astype("float64"), -np.inf)
    top = np.max(scores, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.where(mask, np.exp(scores - top), 0.0)
    total = e.sum(-1, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)


def test_masked_softmax_zeroes_masked_keys_and_empty_rows():
    scores = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "float32")
    mask = np.array([[True, False, True], [False, False, False]])
    weights = to_numpy(attn_ops.masked_softmax(scores, mask))
    np.testing.assert_allclose(weights[0], [1 / (1 + np.e**2), 0.0, np.e**2 / (1 + np.e**2)], rtol=1e-6)
    np.testing.assert_array_equal(weights[1], [0.0, 0.0, 0.0])


def test_masked_softmax_without_mask_is_softmax():
    scores = np.array([[0.0, np.log(3.0)]], "float32")
    np.testing.assert_allclose(to_numpy(attn_ops.masked_softmax(scores)), [[0.25, 0.75]], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_is_safe_and_keeps_dtype(dtype):
    import keras

    scores = keras.ops.cast(np.array([[60000.0, -60000.0, 3.0], [1.0, 2.0, 3.0]]), dtype)
    mask = np.array([[True, True, False], [False, False, False]])
    weights = attn_ops.masked_softmax(scores, mask)
    assert keras.backend.standardize_dtype(weights.dtype) == dtype
    weights = to_numpy(weights).astype("float32")
    np.testing.assert_allclose(weights, [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert attn_ops.mask_fill_value("float16") == -3e4


def test_float16_overflowed_scores_do_not_make_nan():
    import keras

    scores = keras.ops.cast(np.array([[np.inf, 1.0, -np.inf]]), "float16")
    weights = to_numpy(attn_ops.masked_softmax(scores)).astype("float32")
    np.testing.assert_allclose(weights, [[1.0, 0.0, 0.0]])


@settings(max_examples=60, deadline=None)
@given(
    scores=hnp.arrays(
        "float32",
        hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=6),
        elements=st.floats(-1e4, 1e4, width=32),
    ),
    data=st.data(),
    dtype=st.sampled_from(["float32", "float16", "bfloat16"]),
)
def test_masked_softmax_matches_reference_under_random_masks(scores, data, dtype):
    import keras

    mask = data.draw(hnp.arrays(bool, scores.shape))
    weights = to_numpy(attn_ops.masked_softmax(keras.ops.cast(scores, dtype), mask))
    weights = weights.astype("float32")
    assert np.all(np.isfinite(weights))
    assert np.all(weights[~mask] == 0)
    expected = _reference_masked_softmax(to_numpy(keras.ops.cast(scores, dtype)).astype("float32"), mask)
    np.testing.assert_allclose(weights, expected, atol=1e-2 if dtype != "float32" else 1e-5)
    empty = ~mask.any(-1)
    assert np.all(weights[empty] == 0)


def test_masked_log_softmax_agrees_with_masked_softmax():
    scores = np.array([[1.0, 2.0, 3.0, 4.0]], "float32")
    mask = np.array([[True, False, True, True]])
    log_probs = to_numpy(attn_ops.masked_log_softmax(scores, mask))
    probs = to_numpy(attn_ops.masked_softmax(scores, mask))
    np.testing.assert_allclose(np.exp(log_probs[mask]), probs[mask], rtol=1e-6)
    assert np.isfinite(log_probs).all() and log_probs[0, 1] <= -1e8


def test_weighted_sum_and_causal_mask():
    rng = np.random.default_rng(0)
    weights = rng.random((2, 3, 4)).astype("float32")
    values = rng.random((2, 4, 5)).astype("float32")
    np.testing.assert_allclose(
        to_numpy(attn_ops.weighted_sum(weights, values)),
        np.einsum("bqk,bkd->bqd", weights, values), rtol=1e-6,
    )
    np.testing.assert_array_equal(
        to_numpy(attn_ops.causal_mask(3, 4))[0], np.tril(np.ones((3, 4), bool))
    )


def test_attention_mask_merges_every_source():
    query_mask = np.array([[True, False]])
    key_mask = np.array([[True, True, False]])
    explicit = np.array([[[True, False, True], [True, True, True]]])
    merged = to_numpy(
        attn_ops.attention_mask(2, 3, mask=explicit, query_mask=query_mask,
                                key_masks=(key_mask, None), use_causal_mask=True)
    )
    np.testing.assert_array_equal(merged, [[[True, False, False], [False, False, False]]])
    assert attn_ops.attention_mask(2, 3) is None


def test_as_tensors_converts_array_likes_and_passes_tensors_through():
    import keras

    tensor = keras.ops.ones((2,))
    array, same, nothing, listed = attn_ops.as_tensors(np.arange(3.0, dtype="float32"), tensor,
                                                        None, [1.0, 2.0])
    assert keras.ops.is_tensor(array) and keras.ops.is_tensor(listed)
    assert same is tensor and nothing is None
    np.testing.assert_array_equal(to_numpy(array), [0.0, 1.0, 2.0])
    # One value comes back alone, not as a 1-tuple, and works with a backend tensor
    # on every backend (numpy's `*` does not defer to a PyTorch tensor).
    product = attn_ops.as_tensors(np.full((2,), 3.0, "float32")) * tensor
    np.testing.assert_array_equal(to_numpy(product), [3.0, 3.0])


def test_clip_gradient_leaves_the_value_and_clips_each_gradient_entry():
    x = np.array([[0.5, -3.0, 40.0]], "float32")
    np.testing.assert_array_equal(to_numpy(attn_ops.clip_gradient(x, 2.0)), x)
    # d/dx Σ c·x is c; through clip_gradient it is c clipped to [−2, 2].
    scale = np.array([[100.0, -0.5, -7.0]], "float32")
    grad = input_gradient(lambda v: ops.sum(attn_ops.clip_gradient(v, 2.0) * scale), x)
    np.testing.assert_allclose(grad, [[2.0, -0.5, -2.0]])


def test_clip_gradient_bounds_a_gradient_that_grows_each_step():
    def unrolled(v, limit):
        for _ in range(60):  # ×3 a step: 3^60 ≈ 4e28 without the clip
            v = (v if limit is None else attn_ops.clip_gradient(v, limit)) * 3.0
        return ops.sum(v)

    x = np.ones((4,), "float32")
    assert np.all(input_gradient(lambda v: unrolled(v, None), x) > 1e28)
    np.testing.assert_allclose(input_gradient(lambda v: unrolled(v, 1.0), x), 1.0)
