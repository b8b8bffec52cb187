import numpy as np
import pytest

from keras_attn.memory import ModernHopfield
from tests.keras_attn.contract import (
    assert_ignores_masked_steps,
    run_layer_contract,
    to_numpy,
)


def _binary(rng, *shape):
    return np.sign(rng.normal(size=shape)).astype("float32")


@pytest.mark.parametrize(
    "kwargs, n_weights, output_size",
    [
        ({}, 0, 8),
        ({"beta": 0.5, "update_steps": 3}, 0, 8),
        ({"key_dim": 4}, 3, 6),
        ({"key_dim": 4, "value_dim": 5, "update_steps": 2}, 3, 5),
    ],
)
def test_contract(rng, kwargs, n_weights, output_size):
    stored_size = 6 if "key_dim" in kwargs else 8
    inputs = {
        "state": rng.normal(size=(2, 3, 8)).astype("float32"),
        "stored": rng.normal(size=(2, 7, stored_size)).astype("float32"),
        "mask": np.array([[1] * 5 + [0] * 2, [1] * 7], bool),
    }
    run_layer_contract(
        ModernHopfield, kwargs, inputs, [(2, 3, output_size), (2, 3, 7)],
        call_kwargs={"return_attention_scores": True}, expect_trainable_weights=n_weights,
        fit=n_weights > 0,
    )


def test_one_update_retrieves_from_a_thousand_patterns(rng):
    """Exponential storage: 1,000 patterns in 64 dimensions, 10 % of bits flipped."""
    stored = _binary(rng, 1, 1000, 64)
    index = rng.integers(0, 1000, 50)
    noisy = stored[0, index] * np.where(rng.random((50, 64)) < 0.1, -1.0, 1.0)
    retrieved = to_numpy(ModernHopfield(beta=1.0)(noisy[None].astype("float32"), stored))[0]
    np.testing.assert_array_equal(np.sign(retrieved), stored[0, index])
    np.testing.assert_allclose(retrieved, stored[0, index], atol=1e-2)
    assert np.median(np.abs(retrieved - stored[0, index]).max(-1)) < 1e-6


def test_update_is_the_papers_rule(rng):
    stored = rng.normal(size=(2, 9, 5)).astype("float32")
    state = rng.normal(size=(2, 5)).astype("float32")
    layer = ModernHopfield(beta=0.7, update_steps=2)
    xi = state.astype("float64")
    for _ in range(2):
        scores = 0.7 * np.einsum("bmd,bd->bm", stored, xi)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        xi = np.einsum("bm,bmd->bd", p, stored)
    np.testing.assert_allclose(to_numpy(layer(state, stored)), xi, atol=1e-5)


def test_the_hopfield_layer_projects_as_eq_10(rng):
    state = rng.normal(size=(2, 3, 8)).astype("float32")
    stored = rng.normal(size=(2, 7, 6)).astype("float32")
    layer = ModernHopfield(key_dim=4, value_dim=5, beta=0.5)
    output = to_numpy(layer(state, stored))
    w_q, w_k, w_v = (to_numpy(d.kernel) for d in
                     (layer.query_projection, layer.key_projection, layer.value_projection))
    keys = stored @ w_k
    scores = 0.5 * (state @ w_q) @ keys.transpose(0, 2, 1)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(output, p @ keys @ w_v, atol=1e-5)


def test_updates_never_raise_the_energy(rng):
    stored = rng.normal(size=(3, 20, 8)).astype("float32")
    state = rng.normal(size=(3, 4, 8)).astype("float32")
    energies = [to_numpy(ModernHopfield(beta=2.0).energy(state, stored))]
    for steps in range(1, 5):
        layer = ModernHopfield(beta=2.0, update_steps=steps)
        energies.append(to_numpy(layer.energy(layer(state, stored), stored)))
    assert np.all(np.diff(np.stack(energies), axis=0) <= 1e-5)


def test_masked_patterns_are_never_retrieved(rng):
    stored = _binary(rng, 2, 10, 16)
    mask = np.ones((2, 10), bool)
    mask[:, 4] = False
    probe = stored[:, 4].copy()  # a probe equal to a masked pattern
    layer = ModernHopfield(beta=1.0)
    _, weights = layer(probe, stored, mask=mask, return_attention_scores=True)
    assert np.all(to_numpy(weights)[:, 4] == 0)
    assert_ignores_masked_steps(
        lambda x: layer(probe, x["stored"], mask=mask), {"stored": stored}, "stored", mask
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"beta": 0}, r"`beta` must be a number > 0 or None; received 0"),
        ({"update_steps": 0}, r"`update_steps` must be a positive integer; received 0"),
        ({"key_dim": -2}, r"`key_dim` must be a positive integer or None; received -2"),
        ({"value_dim": 3}, r"`value_dim` needs `key_dim`"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ModernHopfield(**kwargs)


def test_bad_inputs(rng):
    with pytest.raises(ValueError, match=r"`state` and `stored` must have the same pattern size"):
        ModernHopfield()(np.ones((2, 5), "float32"), np.ones((2, 7, 6), "float32"))
    with pytest.raises(ValueError, match=r"`stored` must have rank 3; received `stored` of rank 2"):
        ModernHopfield()(np.ones((2, 5), "float32"), np.ones((7, 5), "float32"))
