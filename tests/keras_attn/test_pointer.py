import keras
import numpy as np
import pytest

from keras_attn import PointerAttention
from keras_attn.ops import mask_fill_value
from tests.keras_attn.contract import run_layer_contract, to_numpy

B, T, DQ, DK = 3, 6, 5, 4


def _inputs(rng):
    mask = np.ones((B, T), bool)
    mask[1, 4:] = False
    return (rng.normal(size=(B, DQ)).astype("float32"),
            rng.normal(size=(B, T, DK)).astype("float32"), mask)


@pytest.mark.parametrize("glimpses, clip", [(0, None), (1, 10.0), (2, None)])
def test_layer_contract(glimpses, clip, rng):
    query, keys, mask = _inputs(rng)
    run_layer_contract(
        PointerAttention, {"units": 7, "glimpses": glimpses, "logit_clip": clip},
        {"query": query, "keys": keys, "mask": mask}, (B, T),
        expect_trainable_weights=4 * (glimpses + 1),
        mixed_precision=False,  # float32 log-probabilities by design: checked below
    )


def test_mixed_float16_gives_finite_float32_log_probabilities_close_to_float32(rng):
    query, keys, mask = _inputs(rng)
    full = PointerAttention(units=7, glimpses=1)
    want = to_numpy(full(query, keys, mask=mask))
    half = PointerAttention(units=7, glimpses=1, dtype="mixed_float16")
    half(query, keys, mask=mask)
    half.set_weights(full.get_weights())
    got = half(query, keys, mask=mask)
    assert keras.backend.standardize_dtype(got.dtype) == "float32"
    got = to_numpy(got)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got[mask], want[mask], atol=3e-2)


def test_plain_pointer_is_the_log_softmax_of_the_additive_score(rng):
    query, keys, _ = _inputs(rng)
    layer = PointerAttention(units=7)
    log_probs = to_numpy(layer(query, keys))
    score = layer.pointer_score
    u = to_numpy(score(query, keys))
    want = u - np.log(np.exp(u).sum(-1, keepdims=True))
    np.testing.assert_allclose(log_probs, want, atol=1e-5)


def test_padding_and_chosen_positions_get_no_probability(rng):
    query, keys, mask = _inputs(rng)
    chosen = np.zeros((B, T), bool)
    chosen[0, [1, 3]] = True
    layer = PointerAttention(units=7, glimpses=1)
    probs = np.exp(to_numpy(layer(query, keys, mask=mask, chosen=chosen)))
    assert np.all(probs[0, [1, 3]] == 0) and np.all(probs[1, 4:] == 0)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    # Pointing greedily while marking what was chosen gives a permutation of the
    # real positions, whatever the scores.
    chosen = np.zeros((B, T), bool)
    order = []
    for _ in range(T):
        pick = to_numpy(layer(query, keys, mask=mask, chosen=chosen)).argmax(-1)
        order.append(pick)
        chosen[np.arange(B), pick] = True
    order = np.stack(order, 1)
    assert sorted(order[0]) == list(range(T)) and sorted(order[1, :4]) == [0, 1, 2, 3]


def test_no_allowed_position_is_finite(rng):
    query, keys, _ = _inputs(rng)
    out = to_numpy(PointerAttention(units=7, glimpses=1)(query, keys, mask=np.zeros((B, T), bool)))
    assert np.all(np.isfinite(out)) and np.all(out == mask_fill_value("float32"))


def test_logit_clipping_bounds_the_spread(rng):
    query, keys, _ = _inputs(rng)
    keys = keys * 100.0
    log_probs = to_numpy(PointerAttention(units=7, logit_clip=2.0)(query, keys))
    # With |logits| ≤ C, no two positions differ by more than 2C in log-probability.
    assert np.all(log_probs.max(-1) - log_probs.min(-1) <= 4.0 + 1e-5)


def test_precomputed_keys_give_the_same_result(rng):
    query, keys, mask = _inputs(rng)
    layer = PointerAttention(units=7, glimpses=1)
    direct = to_numpy(layer(query, keys, mask=mask))
    cached = to_numpy(layer(query, keys, mask=mask, precomputed_keys=layer.precompute_keys(keys)))
    np.testing.assert_allclose(direct, cached, atol=1e-6)


def test_bad_inputs_raise_clear_errors(rng):
    query, keys, _ = _inputs(rng)
    layer = PointerAttention(units=7)
    with pytest.raises(ValueError, match=r"`query` must be \(B, dq\) or \(B, Tq, dq\)"):
        layer(keys[:, :, :, None], keys)
    with pytest.raises(ValueError, match=r"`chosen` must have shape"):
        layer(query, keys, chosen=np.zeros((B, T + 1), bool))
    with pytest.raises(ValueError, match="`glimpses`"):
        PointerAttention(units=7, glimpses=-1)
    with pytest.raises(ValueError, match="`logit_clip`"):
        PointerAttention(units=7, logit_clip=0.0)


def test_a_sequence_of_queries_equals_one_call_per_step(rng):
    # Teacher forcing scores every decoder step at once, each with its own `chosen`.
    query, keys, mask = _inputs(rng)
    steps = 4
    queries = rng.normal(size=(B, steps, DQ)).astype("float32")
    chosen = np.zeros((B, steps, T), bool)
    chosen[:, 1:, 0] = True
    chosen[:, 3:, 2] = True
    layer = PointerAttention(units=7, glimpses=1, logit_clip=5.0)
    together = to_numpy(layer(queries, keys, mask=mask, chosen=chosen))
    assert together.shape == (B, steps, T)
    for t in range(steps):
        alone = to_numpy(layer(queries[:, t], keys, mask=mask, chosen=chosen[:, t]))
        np.testing.assert_allclose(together[:, t], alone, atol=1e-5)
    # A (B, Tq, T) mask excludes per step as well.
    per_step = np.broadcast_to(mask[:, None], (B, steps, T)) & ~chosen
    np.testing.assert_allclose(to_numpy(layer(queries, keys, mask=per_step)), together, atol=1e-6)


def test_precomputed_keys_must_be_what_precompute_keys_returns(rng):
    query, keys, mask = _inputs(rng)
    layer = PointerAttention(units=7, glimpses=1)
    projected = layer.precompute_keys(keys)
    with pytest.raises(ValueError, match=r"must be the list of 2 tensors .*; received a list of 1"):
        layer(query, keys, precomputed_keys=projected[1:])
    with pytest.raises(ValueError, match=r"must be the list of 2 tensors .*; received \w+"):
        layer(query, keys, precomputed_keys=projected[0])
    with pytest.raises(ValueError, match=rf"`precomputed_keys` must have shape \({B}, {T}, 7\)"):
        layer(query, keys, precomputed_keys=[projected[0], keys])
