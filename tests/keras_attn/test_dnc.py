import keras
import numpy as np
import pytest
from keras import ops

from keras_attn.memory import DNCCell, dnc
from tests.keras_attn.contract import run_layer_contract, to_numpy


@pytest.mark.parametrize("known_heads", [True, False])
def test_usage_follows_the_retention_equation(rng, known_heads):
    """Also when the read-head count is known only when `usage` runs."""
    previous_usage = rng.random((2, 6)).astype("float32")
    previous_write = rng.random((2, 6)).astype("float32") / 6
    previous_reads = rng.random((2, 3, 6)).astype("float32") / 6
    free_gates = rng.random((2, 3)).astype("float32")
    retention = np.prod(1 - free_gates[..., None] * previous_reads, axis=1)
    expected = (previous_usage + previous_write - previous_usage * previous_write) * retention
    arrays = [previous_usage, previous_write, previous_reads, free_gates]
    if known_heads:
        out = dnc.usage(*arrays)
    else:
        inputs = [keras.Input((6,)), keras.Input((6,)), keras.Input((None, 6)),
                  keras.Input((None,))]
        out = keras.Model(inputs, dnc.usage(*inputs))(arrays)
    np.testing.assert_allclose(to_numpy(out), expected, atol=1e-6)


def test_allocation_by_hand():
    """u = (0.5, 0.2, 0.9, 0.7): free order 1, 0, 3, 2."""
    usage = np.array([[0.5, 0.2, 0.9, 0.7]], "float32")
    expected = [[0.5 * 0.2, 0.8, 0.1 * 0.2 * 0.5 * 0.7, 0.3 * 0.2 * 0.5]]
    np.testing.assert_allclose(to_numpy(dnc.allocation(usage)), expected, atol=1e-5)


def test_allocation_prefers_free_rows_and_never_exceeds_one(rng):
    usage = rng.random((5, 10)).astype("float32")
    usage[:, 7] = 0.0
    allocation = to_numpy(dnc.allocation(usage))
    assert np.all(allocation.argmax(-1) == 7) and np.all(allocation[:, 7] > 0.99)
    assert np.all(allocation >= 0) and np.all(allocation.sum(-1) <= 1 + 1e-6)
    np.testing.assert_allclose(to_numpy(dnc.allocation(np.ones((1, 4), "float32"))), 0, atol=1e-5)


def test_links_replay_the_order_of_writes():
    """Write rows 3, 1, 4, 0 in turn: forward reads follow that order, backward reverses it."""
    n = 6
    link = np.zeros((1, n, n), "float32")
    precedence = np.zeros((1, n), "float32")
    for row in (3, 1, 4, 0):
        write = np.eye(n, dtype="float32")[[row]]
        link = dnc.update_links(link, precedence, write)
        precedence = dnc.update_precedence(precedence, write)
    link = to_numpy(link)
    assert np.all(np.diag(link[0]) == 0)
    reads = np.eye(n, dtype="float32")[[3, 1, 4, 0]][None]  # four read heads
    forward, backward = (to_numpy(x)[0] for x in dnc.directional_weightings(link, reads))
    np.testing.assert_allclose(forward.argmax(-1)[:3], [1, 4, 0])
    np.testing.assert_allclose(forward.max(-1)[:3], 1.0, atol=1e-6)
    np.testing.assert_allclose(forward[3], 0.0, atol=1e-6)  # nothing written after row 0
    np.testing.assert_allclose(backward.argmax(-1)[1:], [3, 1, 4])
    np.testing.assert_allclose(backward[0], 0.0, atol=1e-6)  # nothing before row 3


def test_soft_link_and_precedence_updates_follow_the_equations(rng):
    link = rng.random((2, 5, 5)).astype("float32") / 5
    precedence = rng.random((2, 5)).astype("float32") / 5
    write = rng.random((2, 5)).astype("float32") / 5
    expected = (1 - write[:, :, None] - write[:, None, :]) * link + write[:, :, None] * precedence[:, None, :]
    expected *= 1 - np.eye(5)
    np.testing.assert_allclose(to_numpy(dnc.update_links(link, precedence, write)), expected, atol=1e-6)
    np.testing.assert_allclose(
        to_numpy(dnc.update_precedence(precedence, write)),
        (1 - write.sum(-1, keepdims=True)) * precedence + write, atol=1e-6,
    )


def test_write_weighting_gates():
    allocation = np.array([[0.0, 1.0, 0.0]], "float32")
    content = np.array([[0.5, 0.0, 0.5]], "float32")
    ones, zeros = np.ones((1,), "float32"), np.zeros((1,), "float32")
    np.testing.assert_allclose(to_numpy(dnc.write_weighting(allocation, content, ones, ones)), allocation)
    np.testing.assert_allclose(to_numpy(dnc.write_weighting(allocation, content, zeros, ones)), content)
    np.testing.assert_allclose(to_numpy(dnc.write_weighting(allocation, content, ones, zeros)), 0.0)


@keras.saving.register_keras_serializable(package="keras_attn_tests")
class DNCSequence(keras.layers.Layer):
    """A `DNCCell` in `keras.layers.RNN`, as one layer for the contract."""

    def __init__(self, cell_options=None, **kwargs):
        super().__init__(**kwargs)
        self.cell_options = dict(cell_options or {})
        self.rnn = keras.layers.RNN(
            DNCCell(units=4, memory_size=6, memory_width=5, read_heads=2, controller_units=12,
                    dtype=self.dtype_policy, **self.cell_options),
            return_sequences=True, dtype=self.dtype_policy,
        )

    def get_config(self):
        return {**super().get_config(), "cell_options": self.cell_options}

    def build(self, sequence_shape):
        self.rnn.build(sequence_shape)

    def call(self, sequence):
        return self.rnn(sequence)


def test_cell_in_an_rnn_contract(rng):
    x = rng.normal(size=(2, 6, 3)).astype("float32")
    run_layer_contract(DNCSequence, {}, {"sequence": x}, (2, 6, 4), mixed_tolerance=5e-2)


ROBUST = {"layer_norm": True, "bypass_dropout": 0.2, "temporal_links": False, "seed": 3}


@pytest.mark.parametrize("options", [
    ROBUST, {"layer_norm": True}, {"bypass_dropout": 0.3, "seed": 1}, {"temporal_links": False},
], ids=["robust", "layer_norm", "bypass_dropout", "no_links"])
def test_the_robust_options_keep_the_layer_contract(rng, options):
    x = rng.normal(size=(2, 6, 3)).astype("float32")
    run_layer_contract(DNCSequence, {"cell_options": options}, {"sequence": x}, (2, 6, 4),
                       mixed_tolerance=5e-2)


def test_without_temporal_links_reads_are_by_content_and_no_link_matrix_is_kept(rng):
    cell = DNCCell(units=4, memory_size=8, memory_width=5, read_heads=2, temporal_links=False)
    states = cell.get_initial_state(3)
    assert tuple(states[-1].shape) == (3, 1, 1) and tuple(states[-2].shape) == (3, 1)
    x = rng.normal(size=(3, 3)).astype("float32")
    cell(x, states)  # builds
    for _ in range(3):
        _, states = cell(x, states)
    memory, read_weights = to_numpy(states[2]), to_numpy(states[4])
    interface = cell._interface(states[0])
    from keras_attn.memory import addressing

    content = to_numpy(addressing.content_weighting(
        ops.convert_to_tensor(memory), interface["read_keys"], interface["read_strengths"]))
    np.testing.assert_allclose(read_weights, content, rtol=1e-5, atol=1e-6)
    assert to_numpy(states[-1]).shape == (3, 1, 1) and np.all(to_numpy(states[-1]) == 0)


def test_bypass_dropout_acts_in_training_only_with_one_mask_a_sequence(rng):
    cell = DNCCell(units=4, memory_size=6, memory_width=5, read_heads=1, controller_units=16,
                   bypass_dropout=0.5, seed=0)
    rnn = keras.layers.RNN(cell, return_sequences=True)
    x = rng.normal(size=(2, 7, 3)).astype("float32")
    inference = to_numpy(rnn(x))
    np.testing.assert_allclose(to_numpy(rnn(x)), inference, rtol=1e-6)
    trained = to_numpy(rnn(x, training=True))
    assert not np.allclose(trained, inference)
    # Only the output's bypass is dropped: the memory's states are those of inference.
    cell_plain = DNCCell.from_config({**cell.get_config(), "bypass_dropout": 0.0})
    rnn_plain = keras.layers.RNN(cell_plain, return_sequences=True, return_state=True)
    rnn_plain(x)
    rnn_plain.set_weights(rnn.get_weights())
    rnn_states = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    _, *trained_states = rnn_states(x, training=True)
    _, *plain_states = rnn_plain(x)
    for a, b in zip(trained_states, plain_states, strict=True):
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-5, atol=1e-6)


def test_cell_weightings_are_sub_distributions(rng):
    cell = DNCCell(units=4, memory_size=8, memory_width=5, read_heads=2, return_weightings=True)
    outputs = keras.layers.RNN(cell, return_sequences=True)(
        rng.normal(size=(3, 10, 3)).astype("float32")
    )
    output, reads, write = cell.split_output(outputs)
    assert tuple(output.shape) == (3, 10, 4)
    assert tuple(reads.shape) == (3, 10, 2, 8) and tuple(write.shape) == (3, 10, 1, 8)
    for weights in (reads, write):
        weights = to_numpy(weights)
        assert np.all(weights >= 0) and np.all(weights.sum(-1) <= 1 + 1e-5)
    assert np.all(np.isfinite(to_numpy(ops.convert_to_tensor(output))))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"units": 0}, r"`units` must be a positive integer; received 0"),
        ({"units": 4, "memory_size": 0}, r"`memory_size` must be a positive integer; received 0"),
        ({"units": 4, "read_heads": 1.0}, r"`read_heads` must be a positive integer; received 1.0"),
        ({"units": 4, "bypass_dropout": 1.0}, r"`bypass_dropout` must be a number in \[0, 1\)"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DNCCell(**kwargs)
