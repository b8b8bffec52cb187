import itertools

import keras
import numpy as np
import pytest

import keras_attn
from keras_attn.structured import chain_marginals
from tests.keras_attn.contract import run_layer_contract, to_numpy


def _brute_force(unary, transitions, mask):
    """p(z_j = 1) by enumerating every z ∈ {0, 1}^T over the unmasked positions."""
    real = [j for j in range(len(unary)) if mask[j]]
    totals, marginals = 0.0, np.zeros(len(unary))
    for bits in itertools.product((0, 1), repeat=len(real)):
        z = dict(zip(real, bits, strict=True))
        energy = sum(unary[j] * z[j] for j in real)
        energy += sum(transitions[z[a], z[b]] for a, b in zip(real, real[1:], strict=False)
                      if b == a + 1)
        weight = np.exp(energy)
        totals += weight
        for j in real:
            marginals[j] += weight * z[j]
    return marginals / totals


@pytest.mark.parametrize("length", [1, 2, 5, 8])
def test_marginals_equal_brute_force_enumeration(length, rng):
    unary = rng.normal(size=(3, length)) * 2
    transitions = rng.normal(size=(2, 2)) * 2
    mask = np.ones((3, length), bool)
    mask[1, length // 2:] = False  # trailing padding
    if length > 3:
        mask[2, 1] = False  # a gap: no link across it
    got = to_numpy(chain_marginals(unary.astype("float32"), transitions.astype("float32"),
                                   mask))
    want = np.stack([_brute_force(unary[b], transitions, mask[b]) for b in range(3)])
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_without_transitions_the_weights_are_sigmoids(rng):
    query = rng.normal(size=(2, 3, 4)).astype("float32")
    value = rng.normal(size=(2, 6, 4)).astype("float32")
    layer = keras_attn.SegmentAttention()
    context, weights = layer(query, value, return_attention_scores=True)
    scores = np.einsum("bqd,bkd->bqk", query, value)
    np.testing.assert_allclose(to_numpy(weights), 1 / (1 + np.exp(-scores)), atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), np.einsum("bqk,bkd->bqd", to_numpy(weights),
                                                            value), atol=1e-5)


def test_masked_keys_and_padded_queries_get_zero(rng):
    query = rng.normal(size=(2, 3, 4)).astype("float32")
    value = rng.normal(size=(2, 5, 4)).astype("float32")
    value_mask = np.array([[1, 1, 1, 0, 0], [0, 0, 0, 0, 0]], bool)
    query_mask = np.array([[1, 1, 0], [1, 1, 1]], bool)
    layer = keras_attn.SegmentAttention(score="general")
    context, weights = layer(query, value, query_mask=query_mask, value_mask=value_mask,
                             return_attention_scores=True)
    weights, context = to_numpy(weights), to_numpy(context)
    assert np.all(weights[0, :, 3:] == 0) and np.all(weights[0, 2] == 0)
    assert np.all(weights[1] == 0) and np.all(context[1] == 0)
    assert np.all(np.isfinite(context))


@pytest.mark.parametrize("score", ["dot", "general", "additive"])
def test_layer_contract(score, rng):
    mask = np.ones((2, 6), bool)
    mask[1, 4:] = False
    run_layer_contract(
        keras_attn.SegmentAttention, {"score": score},
        {"query": rng.normal(size=(2, 3, 8)).astype("float32"),
         "value": rng.normal(size=(2, 6, 8)).astype("float32"), "value_mask": mask},
        [(2, 3, 8), (2, 3, 6)], call_kwargs={"return_attention_scores": True},
    )


def test_gradients_reach_the_transitions_and_are_finite(rng):
    query = keras.Input((3, 4))
    value = keras.Input((7, 4))
    context = keras_attn.SegmentAttention(name="segment")(query, value)
    model = keras.Model([query, value], keras.layers.GlobalAveragePooling1D()(context))
    model.compile("adam", "mse")
    x = [rng.normal(size=(8, 3, 4)).astype("float32") * 10,  # saturated scores
         rng.normal(size=(8, 7, 4)).astype("float32")]
    before = to_numpy(model.get_layer("segment").transitions)
    model.fit(x, rng.normal(size=(8, 4)).astype("float32"), epochs=2, verbose=0)
    after = to_numpy(model.get_layer("segment").transitions)
    assert np.all(np.isfinite(after)) and np.any(after != before)
