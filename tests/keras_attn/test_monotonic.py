import keras
import numpy as np
import pytest

import keras_attn
from keras_attn.monotonic import monotonic_alignment
from tests.keras_attn.contract import run_layer_contract, to_numpy


def _brute_force(p, previous):
    """α_{i,j} = p_j Σ_{k≤j} α_{i−1,k} Π_{l=k}^{j−1} (1 − p_l), term by term."""
    alignment = np.zeros_like(p, dtype="float64")
    for b in range(p.shape[0]):
        for j in range(p.shape[1]):
            alignment[b, j] = p[b, j] * sum(
                previous[b, k] * np.prod(1 - p[b, k:j]) for k in range(j + 1)
            )
    return alignment


@pytest.mark.parametrize("mode", ["parallel", "recursive"])
def test_expected_alignment_matches_the_definition(rng, mode):
    p = rng.random((4, 9)).astype("float32")
    previous = rng.random((4, 9)).astype("float32")
    previous /= previous.sum(-1, keepdims=True)
    alignment = to_numpy(monotonic_alignment(p, previous, mode))
    np.testing.assert_allclose(alignment, _brute_force(p, previous), atol=1e-6)
    assert np.all(alignment.sum(-1) <= 1 + 1e-6)


def test_edge_probabilities():
    """The recursive form is exact at p = 0 and 1; the parallel one divides by
    Π(1 − p), which p = 1 makes 0 (the documented price of its speed)."""
    previous = np.array([[0.0, 0.3, 0.7, 0.0]], "float32")
    for mode in ("recursive",):
        stop_at_once = to_numpy(monotonic_alignment(np.ones((1, 4), "float32"), previous, mode))
        np.testing.assert_allclose(stop_at_once, previous, atol=1e-6)
        never_stop = to_numpy(monotonic_alignment(np.zeros((1, 4), "float32"), previous, mode))
        np.testing.assert_allclose(never_stop, 0.0, atol=1e-6)


@pytest.mark.parametrize("start, chosen", [(0, 3), (1, 3), (4, 4), (5, 6), (7, 7)])
def test_hard_mode_stops_at_the_first_choice_from_the_last_position(start, chosen):
    p = np.array([[0, 0, 0, 1, 1, 0, 1, 1]], "float32")
    previous = np.eye(8, dtype="float32")[[start]]
    np.testing.assert_array_equal(
        to_numpy(monotonic_alignment(p, previous, "hard")), np.eye(8)[[chosen]]
    )


@pytest.mark.parametrize(
    "kwargs, n_weights",
    [
        ({"score": "additive", "units": 5, "score_bias_init": -1.0}, 5),
        ({"score": "general", "mode": "recursive"}, 2),
        ({"score": "dot", "sigmoid_noise": 1.0, "seed": 2}, 1),
    ],
)
def test_contract(rng, kwargs, n_weights):
    previous = rng.random((2, 6)).astype("float32")
    inputs = {
        "query": rng.normal(size=(2, 8)).astype("float32"),
        "value": rng.normal(size=(2, 6, 8)).astype("float32"),
        "previous_alignment": previous / previous.sum(-1, keepdims=True),
        "mask": np.array([[1, 1, 1, 1, 0, 0], [1] * 6], bool),
    }
    run_layer_contract(
        keras_attn.MonotonicAttention, kwargs, inputs, [(2, 8), (2, 6)],
        call_kwargs={"return_attention_scores": True}, expect_trainable_weights=n_weights,
        unknown_lengths={"previous_alignment": (None,)},
    )


def test_the_layer_stops_with_sigmoid_of_the_biased_energy(rng):
    query = rng.normal(size=(3, 4)).astype("float32")
    memory = rng.normal(size=(3, 7, 4)).astype("float32")
    layer = keras_attn.MonotonicAttention(score="dot", score_bias_init=-0.5)
    context, alignment = layer(query, memory, return_attention_scores=True)
    p = 1 / (1 + np.exp(-(np.einsum("bd,btd->bt", query, memory) - 0.5)))
    expected = _brute_force(p, np.eye(7)[[0, 0, 0]])
    np.testing.assert_allclose(to_numpy(alignment), expected, atol=1e-5)
    np.testing.assert_allclose(
        to_numpy(context), np.einsum("bt,btd->bd", expected, memory), atol=1e-5
    )


def test_noise_only_in_training(rng):
    query = rng.normal(size=(2, 4)).astype("float32")
    memory = rng.normal(size=(2, 7, 4)).astype("float32")
    layer = keras_attn.MonotonicAttention(score="dot", sigmoid_noise=2.0, seed=0)
    first, second = (to_numpy(layer(query, memory)) for _ in range(2))
    np.testing.assert_array_equal(first, second)
    noisy = to_numpy(layer(query, memory, training=True))
    assert not np.allclose(noisy, first)


def test_masked_positions_never_stop_the_scan(rng):
    query = rng.normal(size=(2, 4)).astype("float32")
    memory = rng.normal(size=(2, 6, 4)).astype("float32")
    mask = np.array([[1, 0, 1, 0, 1, 1], [0, 1, 1, 1, 1, 1]], bool)
    for mode in ("parallel", "recursive", "hard"):
        layer = keras_attn.MonotonicAttention(score="dot", mode=mode)
        _, alignment = layer(query, memory, mask=mask, return_attention_scores=True)
        assert np.all(to_numpy(alignment)[~mask] == 0)


def test_hard_decoding_in_the_wrapper_cell_only_moves_forward(rng):
    memory = rng.normal(size=(4, 9, 6)).astype("float32")
    cell = keras_attn.AttentionWrapperCell(
        keras.layers.GRUCell(6),
        keras_attn.MonotonicAttention(score="dot", mode="hard", score_bias_init=-0.5),
        memory_size=6,
    )
    states = cell.get_initial_state(memory)
    np.testing.assert_array_equal(to_numpy(states[2]), np.eye(9)[[0, 0, 0, 0]])
    positions = []
    for _ in range(8):
        _, states = cell(rng.normal(size=(4, 3)).astype("float32"), states)
        alignment = to_numpy(states[2])
        assert np.all(np.isin(alignment, [0.0, 1.0])) and np.all(alignment.sum(-1) <= 1)
        positions.append(np.where(alignment.sum(-1) > 0, alignment.argmax(-1), 99))
    assert np.all(np.diff(np.stack(positions), axis=0) >= 0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"score": "concat"}, r"`score` must be one of \('additive', 'dot', 'general'\)"),
        ({"mode": "soft"}, r"`mode` must be one of \('parallel', 'recursive', 'hard'\)"),
        ({"sigmoid_noise": -1}, r"`sigmoid_noise` must be a number ≥ 0; received -1"),
        ({"dropout": 0.1}, r"`dropout` does not apply"),
        ({"score": "general", "use_scale": True},
         r"`use_scale` does not apply to monotonic attention.*received use_scale=True"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        keras_attn.MonotonicAttention(**kwargs)


def test_bad_inputs(rng):
    layer = keras_attn.MonotonicAttention(score="dot")
    memory = rng.normal(size=(2, 6, 4)).astype("float32")
    with pytest.raises(ValueError, match=r"`query` must have rank 2; received `query` of rank 3"):
        layer(rng.normal(size=(2, 3, 4)).astype("float32"), memory)
    with pytest.raises(ValueError, match=r"`previous_alignment` must have shape \(2, 6\)"):
        layer(rng.normal(size=(2, 4)).astype("float32"), memory,
              previous_alignment=np.ones((2, 5), "float32"))
