import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import keras_attn
from tests.keras_attn.contract import (
    assert_ignores_masked_steps,
    run_layer_contract,
    to_numpy,
)


def _inputs(rng, b=2, tq=4, tk=9, d=6):
    return {
        "query": rng.normal(size=(b, tq, d)).astype("float32"),
        "value": rng.normal(size=(b, tk, d)).astype("float32"),
    }


def _band(tq, tk, window):
    return np.abs(np.arange(tk)[None, :] - np.arange(tq)[:, None]) <= window


@pytest.mark.parametrize(
    "kwargs, n_weights",
    [
        ({"window": 2, "position": "monotonic", "score": "dot"}, 0),
        ({"window": 1, "position": "monotonic", "score": "general", "scale": True}, 2),
        ({"window": 2, "position": "predictive", "score": "general"}, 3),
        ({"window": 3, "position": "predictive", "score": "concat", "units": 5,
          "position_units": 4}, 5),
    ],
)
def test_contract(rng, kwargs, n_weights):
    run_layer_contract(
        keras_attn.LocalAttention, kwargs, _inputs(rng), [(2, 4, 6), (2, 4, 9)],
        call_kwargs={"return_attention_scores": True},
        expect_trainable_weights=n_weights,
    )


def test_contract_decoder_step_with_positions_and_padding(rng):
    inputs = _inputs(rng)
    inputs["query"] = inputs["query"][:, 0]
    inputs["query_positions"] = np.array([0, 7], "int32")
    inputs["mask"] = np.array([[1] * 6 + [0] * 3, [1] * 9], bool)
    run_layer_contract(
        keras_attn.LocalAttention, {"window": 2, "position": "monotonic", "score": "general"},
        inputs, [(2, 6), (2, 9)], call_kwargs={"return_attention_scores": True},
    )


@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_monotonic_is_global_attention_restricted_to_the_window(rng, score):
    inputs = _inputs(rng)
    local = keras_attn.LocalAttention(window=2, position="monotonic", score=score)
    context, weights = local(**inputs, return_attention_scores=True)
    glob = keras_attn.LuongAttention(score=score)
    glob(**inputs)
    glob.set_weights(local.get_weights())
    band = np.broadcast_to(_band(4, 9, 2), (2, 4, 9))
    expected_context, expected_weights = glob(**inputs, mask=band, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(weights), to_numpy(expected_weights), atol=1e-6)
    np.testing.assert_allclose(to_numpy(context), to_numpy(expected_context), atol=1e-5)
    assert np.all(to_numpy(weights)[:, ~_band(4, 9, 2)] == 0)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_predictive_follows_luong_eqs_9_and_10(rng):
    """p_t = (S−1)·sigmoid(v_pᵀ tanh(W_p h_t)); a_t(s) = softmax_window(score) · Gaussian."""
    inputs = _inputs(rng, tk=12)
    lengths = np.array([12, 8])
    padding = np.arange(12)[None, :] < lengths[:, None]
    window = 2
    local = keras_attn.LocalAttention(window=window, position="predictive", score="general")
    context, weights = local(**inputs, mask=padding, return_attention_scores=True)

    w_a = to_numpy(local.score_layer.key_projection.kernel)
    w_p = to_numpy(local.position_hidden.kernel)
    v_p = to_numpy(local.position_output.kernel)[:, 0]
    h_t, h_s = inputs["query"], inputs["value"]
    p_t = (lengths[:, None] - 1) * _sigmoid(np.tanh(h_t @ w_p) @ v_p)
    expected = np.zeros((2, 4, 12))
    for b in range(2):
        for t in range(4):
            centre = int(np.round(p_t[b, t]))
            s = np.arange(centre - window, centre + window + 1)
            s = s[(s >= 0) & (s < lengths[b])]
            score = (h_s[b, s] @ w_a) @ h_t[b, t]  # h_tᵀ W_a h̄_s
            align = np.exp(score - score.max())
            align /= align.sum()
            gaussian = np.exp(-((s - p_t[b, t]) ** 2) / (2 * (window / 2) ** 2))
            expected[b, t, s] = align * gaussian
    np.testing.assert_allclose(to_numpy(weights), expected, atol=1e-5)
    np.testing.assert_allclose(
        to_numpy(context), np.einsum("bts,bsd->btd", expected, h_s), atol=1e-5
    )
    # The aligned position stays inside each example's own source.
    assert np.all(to_numpy(weights)[1, :, 8:] == 0)


def test_a_decoder_loop_equals_the_whole_sequence(rng):
    inputs = _inputs(rng)
    for position in ("monotonic", "predictive"):
        local = keras_attn.LocalAttention(window=2, position=position, score="general")
        whole, whole_weights = local(**inputs, return_attention_scores=True)
        keys = local.precompute_keys(inputs["value"])
        for t in range(4):
            step, step_weights = local(
                inputs["query"][:, t], inputs["value"], precomputed_keys=keys,
                query_positions=np.full((2,), t, "int32"), return_attention_scores=True,
            )
            np.testing.assert_allclose(to_numpy(step), to_numpy(whole)[:, t], atol=1e-5)
            np.testing.assert_allclose(
                to_numpy(step_weights), to_numpy(whole_weights)[:, t], atol=1e-6
            )


def test_keys_outside_the_window_are_never_read(rng):
    inputs = _inputs(rng)
    local = keras_attn.LocalAttention(window=1, position="monotonic", score="dot")
    outside = ~np.any(_band(4, 9, 1), axis=0)  # source positions no window reaches
    assert outside.sum() == 4
    assert_ignores_masked_steps(
        lambda x: local(**x, return_attention_scores=True), inputs, "value",
        np.broadcast_to(~outside, (2, 9)),
    )


def test_a_window_past_the_source_gives_a_zero_context():
    query = np.ones((1, 2, 3), "float32")
    value = np.ones((1, 4, 3), "float32")
    local = keras_attn.LocalAttention(window=1, position="monotonic", score="dot")
    context, weights = local(
        query, value, query_positions=np.array([[4, 9]], "int32"), return_attention_scores=True
    )
    weights, context = to_numpy(weights), to_numpy(context)
    assert np.all(np.isfinite(context))
    np.testing.assert_array_equal(weights[0, 1], 0.0)  # window 8..10: nothing
    np.testing.assert_array_equal(context[0, 1], 0.0)
    np.testing.assert_allclose(weights[0, 0], [0, 0, 0, 1])  # window 3..5: position 3


@settings(max_examples=20, deadline=None)
@given(
    batch=st.integers(1, 3), tq=st.integers(1, 4), tk=st.integers(1, 7),
    window=st.integers(1, 3), predictive=st.booleans(), seed=st.integers(0, 2**16),
)
def test_no_nan_under_random_masks(batch, tq, tk, window, predictive, seed):
    rng = np.random.default_rng(seed)
    inputs = _inputs(rng, b=batch, tq=tq, tk=tk, d=3)
    mask = rng.random((batch, tk)) < 0.6
    local = keras_attn.LocalAttention(
        window=window, position="predictive" if predictive else "monotonic", score="general"
    )
    context, weights = local(**inputs, mask=mask, return_attention_scores=True)
    weights = to_numpy(weights)
    assert np.all(np.isfinite(to_numpy(context))) and np.all(np.isfinite(weights))
    assert np.all(weights[~np.broadcast_to(mask[:, None, :], weights.shape)] == 0)
    assert np.all(weights.sum(-1) <= 1 + 1e-5)
    empty = ~mask.any(-1)
    assert np.all(to_numpy(context)[empty] == 0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"window": -1}, r"`window` must be an integer ≥ 0; received -1"),
        ({"window": 1.5}, r"`window` must be an integer ≥ 0; received 1.5"),
        ({"window": 0, "position": "predictive"}, r"`window` must be ≥ 1 with position='predictive'"),
        ({"window": 2, "position": "fixed"}, r"`position` must be one of \('monotonic', 'predictive'\)"),
        ({"window": 2, "score": "additive"}, r"`score` must be one of"),
        ({"window": 2, "position_units": 0}, r"`position_units` must be a positive integer"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        keras_attn.LocalAttention(**kwargs)


def test_bad_call_inputs(rng):
    inputs = _inputs(rng)
    monotonic = keras_attn.LocalAttention(window=1, position="monotonic")
    with pytest.raises(ValueError, match=r"needs the target position of a rank-2 query"):
        monotonic(inputs["query"][:, 0], inputs["value"])
    with pytest.raises(TypeError, match=r"`query_positions` must be an integer tensor; received dtype float32"):
        monotonic(inputs["query"], inputs["value"], query_positions=np.zeros((2, 4), "float32"))
    with pytest.raises(ValueError, match=r"`query` must have rank 2 or 3; received `query` of rank 4"):
        monotonic(inputs["query"][None], inputs["value"])
    with pytest.raises(ValueError, match=r"`key` and `value` must have the same length"):
        monotonic(inputs["query"], inputs["value"], key=inputs["value"][:, :5])


def test_precomputed_keys_of_the_wrong_shape_are_rejected(rng):
    inputs = _inputs(rng)
    local = keras_attn.LocalAttention(window=2, score="concat", units=5)
    with pytest.raises(ValueError, match=r"`precomputed_keys` must have shape \(2, 9, 5\)"):
        local(**inputs, precomputed_keys=inputs["value"])
