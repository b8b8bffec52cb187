import numpy as np
import pytest

from keras_attn.memory import DenseAssociativeMemory
from tests.keras_attn.contract import run_layer_contract, to_numpy

N = 100


def _patterns(rng, count, units=N):
    return np.sign(rng.normal(size=(count, units))).astype("float32")


def _probes(rng, patterns, batch=20, flip=0.1):
    index = rng.integers(0, len(patterns), batch)
    noise = np.where(rng.random((batch, patterns.shape[1])) < flip, -1.0, 1.0)
    return (patterns[index] * noise).astype("float32"), patterns[index]


def _classic_hopfield(probe, patterns, sweeps):
    """Hopfield 1982 in numpy: Hebbian W, zero diagonal, units updated in order."""
    weights = patterns.T @ patterns
    np.fill_diagonal(weights, 0)
    state = probe.copy()
    for _ in range(sweeps):
        for i in range(state.shape[1]):
            field = state @ weights[i]
            state[:, i] = np.where(field > 0, 1, np.where(field < 0, -1, state[:, i]))
    return state


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"update": "synchronous"}, {"degree": 4, "sweeps": 2}, {"interaction": "exponential"}],
)
def test_contract(rng, kwargs):
    patterns = _patterns(rng, 6, 12)
    probe, _ = _probes(rng, patterns, batch=3)
    run_layer_contract(
        DenseAssociativeMemory, kwargs,
        {"probe": probe, "patterns": np.repeat(patterns[None], 3, axis=0)},
        (3, 12), fit=False, mixed_tolerance=0.0,
    )


def test_degree_two_is_the_classic_hopfield_network(rng):
    patterns = _patterns(rng, 12)  # near capacity, so recall is not trivial
    probe, _ = _probes(rng, patterns, flip=0.25)
    recalled = to_numpy(DenseAssociativeMemory(sweeps=3)(probe, patterns))
    np.testing.assert_array_equal(recalled, _classic_hopfield(probe, patterns, sweeps=3))


@pytest.mark.parametrize("kwargs", [{}, {"degree": 3}, {"interaction": "exponential"}])
def test_asynchronous_updates_never_raise_the_energy(rng, kwargs):
    patterns = _patterns(rng, 40)
    probe, _ = _probes(rng, patterns, flip=0.3)
    energies = []
    for sweeps in range(1, 5):
        layer = DenseAssociativeMemory(sweeps=sweeps, **kwargs)
        energies.append(to_numpy(layer.energy(layer(probe, patterns), patterns)))
    start = to_numpy(DenseAssociativeMemory(**kwargs).energy(probe, patterns))
    energies = np.stack([start, *energies])
    assert np.all(np.diff(energies, axis=0) <= 1e-6)
    assert np.all(energies[-1] < energies[0])


@pytest.mark.parametrize("update", ["asynchronous", "synchronous"])
def test_the_number_of_patterns_may_be_unknown_until_run_time(rng, update):
    """Shared patterns as a `keras.Input` of unknown count, run through a compiled predict."""
    import keras

    probe_input, patterns_input = keras.Input((N,)), keras.Input((N,))
    layer = DenseAssociativeMemory(update=update, sweeps=2)
    model = keras.Model([probe_input, patterns_input], layer(probe_input, patterns_input))
    model.compile(jit_compile=True)
    for stored in (3, 7):
        patterns = _patterns(rng, stored)
        probe, _ = _probes(rng, patterns, batch=4)
        np.testing.assert_array_equal(
            to_numpy(model.predict_on_batch([probe, patterns])), to_numpy(layer(probe, patterns))
        )


@pytest.mark.parametrize(
    "kwargs, stored, least, most",
    [
        ({}, 5, 0.95, 1.0),           # 0.05 N: the classic network recalls
        ({}, 30, 0.0, 0.3),           # 0.3 N: past its ~0.14 N capacity
        ({"degree": 4}, 200, 0.95, 1.0),  # 2 N patterns: dense memory recalls
        ({"interaction": "exponential"}, 200, 0.95, 1.0),
        ({"degree": 4, "update": "synchronous"}, 200, 0.95, 1.0),
    ],
)
def test_capacity(rng, kwargs, stored, least, most):
    """Exact recall from 10 % flipped bits, N = 100 units."""
    patterns = _patterns(rng, stored)
    probe, target = _probes(rng, patterns, batch=40)
    recalled = to_numpy(DenseAssociativeMemory(**kwargs)(probe, patterns))
    exact = np.mean(np.all(recalled == target, axis=-1))
    assert least <= exact <= most, exact


def test_patterns_per_example(rng):
    patterns = np.stack([_patterns(rng, 5), _patterns(rng, 5)])
    probe = np.stack([patterns[0, 1], patterns[1, 3]]) * np.where(rng.random((2, N)) < 0.1, -1, 1)
    recalled = to_numpy(DenseAssociativeMemory()(probe.astype("float32"), patterns))
    np.testing.assert_array_equal(recalled, np.stack([patterns[0, 1], patterns[1, 3]]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"interaction": "cubic"}, r"`interaction` must be one of \('polynomial', 'exponential'\)"),
        ({"update": "random"}, r"`update` must be one of \('asynchronous', 'synchronous'\)"),
        ({"degree": 1}, r"`degree` must be an integer ≥ 2; received 1"),
        ({"sweeps": 0}, r"`sweeps` must be a positive integer; received 0"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DenseAssociativeMemory(**kwargs)


def test_bad_inputs(rng):
    patterns = _patterns(rng, 5)
    with pytest.raises(ValueError, match=r"`probe` and `patterns` must have the same number of units"):
        DenseAssociativeMemory()(np.ones((2, 50), "float32"), patterns)
    with pytest.raises(ValueError, match=r"`probe` must have rank 2; received `probe` of rank 1"):
        DenseAssociativeMemory()(np.ones((N,), "float32"), patterns)
