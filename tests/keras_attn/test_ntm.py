import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keras import ops

from keras_attn.memory import NTMCell, addressing
from tests.keras_attn.contract import input_gradient, run_layer_contract, to_numpy


def _weights(rng, batch=2, heads=3, n=8):
    w = rng.random((batch, heads, n)).astype("float32")
    return w / w.sum(-1, keepdims=True)


def test_gate_zero_passes_the_previous_weighting_through(rng):
    content, previous = _weights(rng), _weights(rng)
    out = addressing.interpolate(content, previous, np.zeros((2, 3), "float32"))
    np.testing.assert_allclose(to_numpy(out), previous, atol=1e-7)
    out = addressing.interpolate(content, previous, np.ones((2, 3), "float32"))
    np.testing.assert_allclose(to_numpy(out), content, atol=1e-7)


def test_one_hot_shift_rotates_circularly(rng):
    w = _weights(rng)
    plus_one = np.zeros((2, 3, 3), "float32")
    plus_one[..., 2] = 1.0  # offsets (-1, 0, +1)
    np.testing.assert_allclose(to_numpy(addressing.circular_shift(w, plus_one)),
                               np.roll(w, 1, axis=-1), atol=1e-7)
    minus_one = np.zeros((2, 3, 3), "float32")
    minus_one[..., 0] = 1.0
    np.testing.assert_allclose(to_numpy(addressing.circular_shift(w, minus_one)),
                               np.roll(w, -1, axis=-1), atol=1e-7)
    focus = np.zeros((1, 1, 8), "float32")
    focus[..., 7] = 1.0  # the last slot wraps round to the first
    out = to_numpy(addressing.circular_shift(focus, plus_one[:1, :1]))
    assert out[0, 0, 0] == 1.0 and out.sum() == 1.0
    with pytest.raises(ValueError, match="odd size"):
        addressing.circular_shift(w, np.ones((2, 3, 2), "float32"))


def test_shift_by_hand():
    # w = (1, 0, 0, 0), s over (-1, 0, +1) = (0.2, 0.5, 0.3) → (0.5, 0.3, 0, 0.2)
    out = addressing.circular_shift(np.array([[[1.0, 0, 0, 0]]], "float32"),
                                    np.array([[[0.2, 0.5, 0.3]]], "float32"))
    np.testing.assert_allclose(to_numpy(out)[0, 0], [0.5, 0.3, 0.0, 0.2], atol=1e-7)


def test_gamma_one_sharpening_is_the_identity_and_larger_gamma_sharpens(rng):
    w = _weights(rng)
    np.testing.assert_allclose(to_numpy(addressing.sharpen(w, np.ones((2, 3), "float32"))), w,
                               atol=1e-6)
    sharp = to_numpy(addressing.sharpen(w, np.full((2, 3), 4.0, "float32")))
    assert np.all(sharp.max(-1) > w.max(-1))
    np.testing.assert_array_equal(sharp.argmax(-1), w.argmax(-1))


def test_sharpening_zero_weights_has_finite_value_and_gradient():
    w = np.array([[[0.0, 1.0, 0.0, 0.0]]], "float32")
    out = to_numpy(addressing.sharpen(w, np.array([[3.0]], "float32")))
    assert np.all(np.isfinite(out)) and out[0, 0, 1] > 0.999
    if keras.backend.backend() == "jax":
        import jax

        grad = jax.grad(lambda g: addressing.sharpen(w, g)[0, 0, 1])(np.array([[3.0]], "float32"))
        assert np.all(np.isfinite(np.asarray(grad)))


def test_large_beta_picks_the_most_similar_row(rng):
    memory = rng.normal(size=(2, 8, 5)).astype("float32")
    keys = memory[:, [3, 6, 0]] + 0.01 * rng.normal(size=(2, 3, 5)).astype("float32")
    w = to_numpy(addressing.content_weighting(memory, keys, np.full((2, 3), 1000.0, "float32")))
    np.testing.assert_array_equal(w.argmax(-1), [[3, 6, 0]] * 2)
    assert np.all(w.max(-1) > 0.999)


def test_content_addressing_by_hand_and_zero_vectors_are_safe():
    memory = np.array([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]], "float32")
    keys = np.array([[[1.0, 0.0], [0.0, 0.0]]], "float32")
    w = to_numpy(addressing.content_weighting(memory, keys, np.array([[2.0, 5.0]], "float32")))
    e = np.exp([2.0, 0.0, 0.0])
    np.testing.assert_allclose(w[0, 0], e / e.sum(), atol=1e-6)
    np.testing.assert_allclose(w[0, 1], [1 / 3] * 3, atol=1e-6)  # a zero key: no preference


@settings(max_examples=30, deadline=None)
@given(n=st.integers(3, 12), heads=st.integers(1, 3), radius=st.integers(0, 1),
       seed=st.integers(0, 10_000))
def test_weightings_always_sum_to_one_and_stay_non_negative(n, heads, radius, seed):
    rng = np.random.default_rng(seed)
    batch, d = 2, 4
    scale = rng.choice([0.0, 1.0, 100.0])
    memory = (rng.normal(size=(batch, n, d)) * scale).astype("float32")
    previous = _weights(rng, batch, heads, n)
    shifts = rng.random((batch, heads, 2 * radius + 1)).astype("float32")
    out = to_numpy(addressing.address(
        memory, previous,
        keys=rng.normal(size=(batch, heads, d)).astype("float32"),
        strengths=rng.uniform(0, 50, (batch, heads)).astype("float32"),
        gates=rng.random((batch, heads)).astype("float32"),
        shifts=shifts / shifts.sum(-1, keepdims=True),
        gammas=rng.uniform(1, 20, (batch, heads)).astype("float32"),
    ))
    assert np.all(np.isfinite(out)) and np.all(out >= 0)
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-5)


def test_read_and_erase_add_write_by_hand():
    memory = np.array([[[1.0, 2.0], [3.0, 4.0]]], "float32")
    w = np.array([[[1.0, 0.0]]], "float32")
    np.testing.assert_allclose(to_numpy(addressing.read(memory, w)), [[[1.0, 2.0]]])
    erase = np.array([[[1.0, 0.5]]], "float32")
    add = np.array([[[10.0, 20.0]]], "float32")
    out = to_numpy(addressing.write(memory, np.array([[[0.5, 0.0]]], "float32"), erase, add))
    # row 0: m ⊙ (1 − 0.5 e) + 0.5 a = (0.5, 1.5) + (5, 10); row 1 untouched
    np.testing.assert_allclose(out, [[[5.5, 11.5], [3.0, 4.0]]], atol=1e-6)


def test_two_write_heads_do_not_depend_on_their_order(rng):
    memory = rng.normal(size=(1, 6, 3)).astype("float32")
    w, e, a = _weights(rng, 1, 2, 6), rng.random((1, 2, 3)).astype("float32"), rng.normal(
        size=(1, 2, 3)).astype("float32")
    forward = to_numpy(addressing.write(memory, w, e, a))
    backward = to_numpy(addressing.write(memory, w[:, ::-1], e[:, ::-1], a[:, ::-1]))
    np.testing.assert_allclose(forward, backward, atol=1e-6)


@pytest.mark.parametrize("known_heads", [True, False])
def test_several_write_heads_follow_the_erase_add_equations(rng, known_heads):
    """M ⊙ Π_h (1 − w_h e_hᵀ) + Σ_h w_h a_hᵀ, with three heads; also when the head
    count is known only when the function runs (a model built on a `None` head axis)."""
    memory = rng.normal(size=(2, 6, 4)).astype("float32")
    w, e, a = _weights(rng, 2, 3, 6), rng.random((2, 3, 4)).astype("float32"), rng.normal(
        size=(2, 3, 4)).astype("float32")
    keep = np.prod(1 - w[..., None] * e[:, :, None, :], axis=1)
    expected = memory * keep + np.einsum("bhn,bhd->bnd", w, a)
    if known_heads:
        out = to_numpy(addressing.write(memory, w, e, a))
    else:
        inputs = [keras.Input((6, 4)), keras.Input((None, 6)), keras.Input((None, 4)),
                  keras.Input((None, 4))]
        written = keras.Model(inputs, addressing.write(*inputs))
        out = to_numpy(written([memory, w, e, a]))
    np.testing.assert_allclose(out, expected, atol=1e-5)


@keras.saving.register_keras_serializable(package="keras_attn_tests")
class NTMSequence(keras.layers.Layer):
    """An `NTMCell` in `keras.layers.RNN`, as one layer for the contract."""

    def __init__(self, controller="lstm", **kwargs):
        super().__init__(**kwargs)
        self.controller = controller
        self.rnn = keras.layers.RNN(
            NTMCell(units=4, memory_size=8, memory_width=5, controller=controller,
                    controller_units=12, dtype=self.dtype_policy),
            return_sequences=True, dtype=self.dtype_policy,
        )

    def build(self, sequence_shape):
        self.rnn.build(sequence_shape)

    def call(self, sequence):
        return self.rnn(sequence)

    def get_config(self):
        return {**super().get_config(), "controller": self.controller}


@pytest.mark.parametrize("controller", ["lstm", "feedforward"])
def test_cell_in_an_rnn_contract(controller, rng):
    x = rng.normal(size=(2, 6, 3)).astype("float32")
    run_layer_contract(NTMSequence, {"controller": controller}, {"sequence": x}, (2, 6, 4))


def test_cell_returns_weightings_that_are_distributions(rng):
    cell = NTMCell(units=4, memory_size=8, memory_width=5, read_heads=2, write_heads=1,
                   return_weightings=True, memory_init="learned")
    out = keras.layers.RNN(cell, return_sequences=True)(rng.normal(size=(2, 6, 3)).astype("float32"))
    logits, reads, writes = cell.split_output(out)
    assert tuple(logits.shape) == (2, 6, 4)
    assert tuple(reads.shape) == (2, 6, 2, 8) and tuple(writes.shape) == (2, 6, 1, 8)
    for w in (reads, writes):
        np.testing.assert_allclose(to_numpy(ops.sum(w, axis=-1)), 1.0, atol=1e-5)


def test_cell_bad_arguments():
    with pytest.raises(ValueError, match="`controller`"):
        NTMCell(4, controller="gru")
    with pytest.raises(ValueError, match="`memory_init`"):
        NTMCell(4, memory_init="zeros")
    with pytest.raises(ValueError, match="`shift_range`"):
        NTMCell(4, memory_size=2, shift_range=1)
    with pytest.raises(ValueError, match="`read_heads`"):
        NTMCell(4, read_heads=0)


def test_heads_start_on_row_zero_so_a_constant_memory_gets_distinct_rows(rng):
    # With unfocused (uniform or zero) starting weightings a constant memory stays
    # row-symmetric forever: every write lands on every row alike.
    cell = NTMCell(units=4, memory_size=8, memory_width=5, memory_init="constant")
    read_w, write_w = cell.get_initial_state(2)[-2:]
    np.testing.assert_array_equal(to_numpy(read_w)[:, 0], np.eye(8)[[0, 0]])
    np.testing.assert_array_equal(to_numpy(write_w)[:, 0], np.eye(8)[[0, 0]])
    outputs = keras.layers.RNN(cell, return_state=True)(
        rng.normal(size=(2, 6, 3)).astype("float32"))
    memory = to_numpy(outputs[3])  # output, controller h and c, then the memory
    assert memory.shape == (2, 8, 5)
    assert np.ptp(memory, axis=1).max() > 1e-3


def test_mixed_float16_steps_stay_finite(rng):
    keras.config.set_dtype_policy("mixed_float16")
    cell = NTMCell(units=4, memory_size=16, memory_width=6, controller_units=16,
                   return_weightings=True)
    rnn = keras.layers.RNN(cell, return_sequences=True)
    out = to_numpy(rnn(rng.normal(size=(2, 30, 3)).astype("float32")))
    assert out.dtype == np.float16 and np.all(np.isfinite(out))



@pytest.mark.parametrize("zero", ["row", "key"])
def test_content_addressing_gradient_is_finite_at_a_zero_row_or_key(zero):
    # An erased row whose squares flush to zero made the norm's square root
    # differentiate to ∞ · 0 = NaN (a copy run turned every head weight NaN at step 1).
    memory = np.array([[[1.0, 2.0], [0.0, 0.0], [0.5, -1.0]]], "float32")
    keys = np.array([[[0.0, 0.0] if zero == "key" else [1.0, 0.5]]], "float32")
    strengths = np.array([[3.0]], "float32")
    if zero == "row":
        grad = input_gradient(lambda m: ops.sum(addressing.content_weighting(m, keys, strengths)[..., 0]),
                         memory)
    else:
        grad = input_gradient(lambda k: ops.sum(addressing.content_weighting(memory, k, strengths)[..., 0]),
                         keys)
    assert np.all(np.isfinite(grad)), grad


def test_state_gradient_clip_bounds_what_a_step_passes_back_and_keeps_the_forward(rng):
    steps = rng.standard_normal((6, 2, 5)).astype("float32")
    first_memory = rng.standard_normal((2, 8, 4)).astype("float32")

    def run(cell):
        def total(memory):
            states = list(cell.get_initial_state(2))
            states[2] = memory  # after the LSTM's two states
            outputs = []
            for x in steps:
                output, states = cell(x, states)
                outputs.append(output)
            return ops.sum(ops.stack(outputs) ** 2)
        return total

    plain = NTMCell(units=3, memory_size=8, memory_width=4, controller_units=6)
    clipped = NTMCell(units=3, memory_size=8, memory_width=4, controller_units=6,
                      state_gradient_clip=1e-3)
    plain(steps[0], plain.get_initial_state(2))
    clipped(steps[0], clipped.get_initial_state(2))
    clipped.set_weights(plain.get_weights())
    assert clipped.get_config()["state_gradient_clip"] == 1e-3
    np.testing.assert_allclose(to_numpy(run(clipped)(first_memory)),
                               to_numpy(run(plain)(first_memory)), rtol=1e-6)
    unclipped_gradient = input_gradient(run(plain), first_memory)
    clipped_gradient = input_gradient(run(clipped), first_memory)
    assert np.abs(unclipped_gradient).max() > 1e-2
    assert np.abs(clipped_gradient).max() <= 1e-3 + 1e-9
    assert np.abs(clipped_gradient).max() > 0
