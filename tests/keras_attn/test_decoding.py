import itertools

import keras
import numpy as np
import pytest
from keras import ops

from keras_attn import decoding
from tests.keras_attn.contract import to_numpy

END, PAD, START = 3, 0, 2


def markov_step(transition_logits, t_in=5):
    """A toy decoder: logits depend on the previous token only; a counter state."""
    table = ops.convert_to_tensor(transition_logits)

    def step(tokens, states):
        (count,) = states
        logits = ops.take(table, tokens, axis=0)
        alignment = ops.one_hot(ops.minimum(ops.cast(count[:, 0], "int32"), t_in - 1), t_in)
        return logits, [count + 1.0], alignment

    return step


def _table(rng, vocab=6):
    logits = rng.normal(scale=2.0, size=(vocab, vocab)).astype("float32")
    logits[:, PAD] = -30.0  # never emitted
    logits[:, START] = -30.0
    return logits


def _run(fn, **kwargs):
    return {k: to_numpy(v) for k, v in fn(**kwargs).items()}


def test_greedy_picks_argmax_and_stops_at_end(rng):
    table = _table(rng)
    out = _run(decoding.greedy_decode, step_fn=markov_step(table), initial_states=[np.zeros((4, 1), "float32")],
               batch_size=4, max_length=7, start_token=START, end_token=END, alignment_length=5)
    tokens = out["tokens"]
    previous = START
    for t in range(7):
        if previous == END or previous == PAD:
            assert tokens[0, t] == PAD
        else:
            assert tokens[0, t] == np.argmax(table[previous])
        previous = tokens[0, t]
    assert (tokens == tokens[0]).all()  # same start, same path
    assert out["alignments"].shape == (4, 7, 5)


@pytest.mark.parametrize("seed", range(5))
def test_beam_width_one_equals_greedy(seed):
    rng = np.random.default_rng(seed)
    table = _table(rng)
    kwargs = dict(step_fn=markov_step(table), initial_states=[np.zeros((3, 1), "float32")],
                  batch_size=3, max_length=6, start_token=START, end_token=END, alignment_length=5)
    greedy = _run(decoding.greedy_decode, **kwargs)
    beam = _run(decoding.beam_search, beam_width=1, **kwargs)
    np.testing.assert_array_equal(beam["tokens"], greedy["tokens"])
    np.testing.assert_allclose(beam["log_probs"], greedy["scores"], rtol=1e-5)
    np.testing.assert_allclose(beam["alignments"], greedy["alignments"])


def _exhaustive_best(table, max_length, alpha):
    log_probs = table - np.log(np.exp(table).sum(-1, keepdims=True))
    best, best_rank = None, -np.inf
    vocab = table.shape[0]
    for length in range(1, max_length + 1):
        for seq in itertools.product(range(vocab), repeat=length):
            if END in seq[:-1] or PAD in seq or (length < max_length and seq[-1] != END):
                continue
            total, prev = 0.0, START
            for tok in seq:
                total += log_probs[prev, tok]
                prev = tok
            rank = total / ((5 + length) / 6) ** alpha
            if rank > best_rank:
                best, best_rank = seq, rank
    return best, best_rank


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_wide_beam_finds_the_exhaustive_optimum(rng, alpha):
    table = _table(rng, vocab=5)
    best, best_rank = _exhaustive_best(table, 4, alpha)
    out = _run(decoding.beam_search, step_fn=markov_step(table), initial_states=[np.zeros((1, 1), "float32")],
               batch_size=1, beam_width=25, max_length=4, start_token=START, end_token=END,
               alignment_length=5, length_penalty_alpha=alpha)
    assert tuple(out["tokens"][0][: len(best)]) == best
    np.testing.assert_allclose(out["scores"][0], best_rank, rtol=1e-5)


def test_beam_scores_are_sorted_and_at_least_greedy(rng):
    table = _table(rng)
    kwargs = dict(step_fn=markov_step(table), initial_states=[np.zeros((2, 1), "float32")],
                  batch_size=2, max_length=6, start_token=START, end_token=END, alignment_length=5)
    greedy = _run(decoding.greedy_decode, **kwargs)
    beams = _run(decoding.beam_search, beam_width=4, return_all_beams=True, **kwargs)
    assert beams["tokens"].shape == (2, 4, 6)
    assert np.all(np.diff(beams["scores"], axis=1) <= 1e-6)
    assert np.all(beams["log_probs"][:, 0] >= greedy["scores"] - 1e-5)


def test_coverage_penalty_values():
    coverage = np.array([[0.5, 2.0, 0.0]], "float32")
    got = to_numpy(decoding.coverage_penalty(coverage, 0.2, np.array([[True, True, False]])))
    np.testing.assert_allclose(got, [0.2 * np.log(0.5)], rtol=1e-6)
    np.testing.assert_allclose(to_numpy(decoding.length_penalty(np.array([1]), 1.0)), [1.0])


def test_decoding_runs_under_jit(rng):
    table = _table(rng)
    step = markov_step(table)

    def run(states):
        return decoding.beam_search(step, [states], batch_size=2, beam_width=3, max_length=5,
                                    start_token=START, end_token=END, alignment_length=5)["tokens"]

    eager = to_numpy(run(np.zeros((2, 1), "float32")))
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        compiled = tf.function(run, jit_compile=True)
    elif backend == "jax":
        import jax

        compiled = jax.jit(run)
    else:
        pytest.skip(f"no jit for {backend}")
    np.testing.assert_array_equal(to_numpy(compiled(np.zeros((2, 1), "float32"))), eager)


def test_beam_width_must_be_positive():
    with pytest.raises(ValueError, match=r"`beam_width` must be a positive integer; received 0\."):
        decoding.beam_search(None, [], 1, 0, 3, START, END, 2)
    with pytest.raises(ValueError, match=r"`beam_width` must be a positive integer; received 0\."):
        decoding.tile_beams(np.ones((2, 3)), 0)
    assert decoding.tile_beams(np.ones((2, 3)), np.int64(2)).shape == (4, 3)


@pytest.mark.parametrize("decode", ["greedy", "beam"])
def test_sizes_known_in_python_are_checked_before_the_loop(decode):
    def run(max_length=3, alignment_length=2, **kwargs):
        if decode == "greedy":
            return decoding.greedy_decode(None, [], 2, max_length, START, END, alignment_length)
        return decoding.beam_search(None, [], 2, 2, max_length, START, END, alignment_length,
                                    **kwargs)

    with pytest.raises(ValueError, match=r"`max_length` must be a positive integer; received -1\."):
        run(max_length=-1)
    with pytest.raises(ValueError, match=r"`alignment_length` must be a positive integer"):
        run(alignment_length=0)
    if decode == "beam":
        with pytest.raises(ValueError, match=r"`source_mask` must have shape \(2, 2\).*\(2, 5\)"):
            run(coverage_penalty_beta=0.2, source_mask=np.ones((2, 5), bool))


@pytest.mark.parametrize("decode", ["greedy", "beam"])
@pytest.mark.parametrize("argument, value, message", [
    ("start_token", -1, r"`start_token` must be an integer ≥ 0; received -1\."),
    ("end_token", 2.0, r"`end_token` must be an integer ≥ 0; received 2\.0"),
    ("pad_token", True, r"`pad_token` must be an integer ≥ 0; received True"),
])
def test_token_ids_known_in_python_are_checked(decode, argument, value, message):
    tokens = {"start_token": START, "end_token": END, "pad_token": 0, argument: value}
    with pytest.raises(ValueError, match=message):
        if decode == "greedy":
            decoding.greedy_decode(None, [], 2, 3, alignment_length=2, **tokens)
        else:
            decoding.beam_search(None, [], 2, 2, 3, alignment_length=2, **tokens)


@pytest.mark.parametrize("argument, value, message", [
    ("length_penalty_alpha", -0.5, r"`length_penalty_alpha` must be a number ≥ 0; received -0\.5"),
    ("coverage_penalty_beta", float("nan"), r"`coverage_penalty_beta` must be a number ≥ 0; received nan"),
])
def test_penalty_weights_are_checked(argument, value, message):
    with pytest.raises(ValueError, match=message):
        decoding.beam_search(None, [], 2, 2, 3, START, END, 2, **{argument: value})


def _toy_step(vocab=6, length=3):
    def step_fn(tokens, states):
        logits = ops.one_hot(ops.mod(tokens + 1, vocab), vocab) * 5.0
        return logits, states, ops.zeros((ops.shape(tokens)[0], length))
    return step_fn


@pytest.mark.parametrize("decode", ["greedy_decode", "beam_search"])
def test_a_step_fn_without_an_alignment_is_named(decode):
    step_fn = _toy_step()

    def two_values(tokens, states):
        return step_fn(tokens, states)[:2]

    sizes = (2, 2, 5, 0, 5, 3) if decode == "beam_search" else (2, 5, 0, 5, 3)
    with pytest.raises(ValueError, match=r"`step_fn\(tokens, states\)` must return three values, "
                                         r"`\(logits \(N, V\), states, alignment \(N, T_in\)\)`; "
                                         r"received 2 values"):
        getattr(decoding, decode)(two_values, [np.zeros((2, 4), "float32")], *sizes)


def test_states_tiled_before_beam_search_are_refused():
    """TF-Addons asked for `tile_batch` first; here beam_search tiles, so pre-tiled
    states would give K² beams (or a raw concatenation error)."""
    states = [np.zeros((2, 4), "float32")]
    out = decoding.beam_search(_toy_step(), states, 2, 3, 5, 0, 5, 3)
    assert tuple(out["tokens"].shape) == (2, 5)
    tiled = [to_numpy(decoding.tile_beams(s, 3)) for s in states]
    with pytest.raises(ValueError, match=r"`initial_states` must have `batch_size` \(2\) rows, one "
                                         r"per sentence: beam_search tiles them.*received states "
                                         r"with \[6\] rows"):
        decoding.beam_search(_toy_step(), tiled, 2, 3, 5, 0, 5, 3)
    with pytest.raises(ValueError, match=r"must have `batch_size` \(6\) rows"):
        decoding.beam_search(_toy_step(), states, 6, 3, 5, 0, 5, 3)
