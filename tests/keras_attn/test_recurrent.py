import keras
import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import to_numpy


def _attention(kind):
    return {
        "bahdanau": lambda: keras_attn.BahdanauAttention(8),
        "luong-dot": lambda: keras_attn.LuongAttention("dot"),
        "luong-general": lambda: keras_attn.LuongAttention("general", scale=True),
        "luong-concat": lambda: keras_attn.LuongAttention("concat", units=6),
    }[kind]()


def _cell(kind):
    return {"gru": keras.layers.GRUCell, "lstm": keras.layers.LSTMCell,
            "simple": keras.layers.SimpleRNNCell}[kind](12)


@pytest.mark.parametrize("rnn", ["gru", "lstm", "simple"])
@pytest.mark.parametrize("attention", ["bahdanau", "luong-dot", "luong-general", "luong-concat"])
def test_rnn_over_a_sequence_equals_step_by_step(rng, rnn, attention):
    memory = rng.normal(size=(2, 6, 12)).astype("float32")
    mask = np.array([[1] * 6, [1] * 3 + [0] * 3], bool)
    inputs = rng.normal(size=(2, 4, 5)).astype("float32")
    cell = keras_attn.AttentionWrapperCell(
        _cell(rnn), _attention(attention), memory_size=12, attention_layer_size=10
    )
    states = cell.get_initial_state(memory, mask)
    outputs = to_numpy(keras.layers.RNN(cell, return_sequences=True)(inputs, initial_state=states))
    assert outputs.shape == (2, 4, 10)
    step_states = cell.get_initial_state(memory, mask)
    for t in range(4):
        out, step_states = cell(inputs[:, t], step_states)
        np.testing.assert_allclose(to_numpy(out), outputs[:, t], rtol=1e-5, atol=1e-6)
    alignment = to_numpy(step_states[cell.num_cell_states + 1])
    assert np.all(alignment[1, 3:] == 0)
    np.testing.assert_allclose(alignment.sum(-1), 1.0, rtol=1e-5)


def test_padded_memory_does_not_change_outputs(rng):
    memory = rng.normal(size=(2, 6, 8)).astype("float32")
    mask = np.array([[1] * 6, [1] * 2 + [0] * 4], bool)
    noisy = memory.copy()
    noisy[1, 2:] = 100.0
    cell = keras_attn.AttentionWrapperCell(
        keras.layers.GRUCell(8), keras_attn.BahdanauAttention(5), memory_size=8,
        attention_layer_size=8,
    )
    rnn = keras.layers.RNN(cell, return_sequences=True)
    x = rng.normal(size=(2, 3, 4)).astype("float32")
    a = to_numpy(rnn(x, initial_state=cell.get_initial_state(memory, mask)))
    b = to_numpy(rnn(x, initial_state=cell.get_initial_state(noisy, mask)))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_input_feeding_and_output_style(rng):
    memory = rng.normal(size=(2, 5, 8)).astype("float32")
    x = rng.normal(size=(2, 3, 4)).astype("float32")
    fed = keras_attn.AttentionWrapperCell(
        keras.layers.GRUCell(6), keras_attn.LuongAttention("general"), memory_size=8,
        input_feeding=True, output_attention=False,
    )
    out = keras.layers.RNN(fed, return_sequences=True)(x, initial_state=fed.get_initial_state(memory))
    assert tuple(out.shape) == (2, 3, 6)  # Bahdanau style: the cell output
    assert fed.cell.kernel.shape[0] == 4 + 8  # input + previous context
    plain = keras_attn.AttentionWrapperCell(
        keras.layers.GRUCell(6), keras_attn.LuongAttention("general"), memory_size=8,
        input_feeding=False,
    )
    out = keras.layers.RNN(plain, return_sequences=True)(x, initial_state=plain.get_initial_state(memory))
    assert tuple(out.shape) == (2, 3, 8) and plain.cell.kernel.shape[0] == 4


def test_cell_state_and_config_round_trip(rng):
    memory = rng.normal(size=(2, 5, 8)).astype("float32")
    x = rng.normal(size=(2, 3, 4)).astype("float32")
    cell = keras_attn.AttentionWrapperCell(
        keras.layers.LSTMCell(6), keras_attn.BahdanauAttention(4, normalize=True),
        memory_size=8, attention_layer_size=7,
    )
    h0 = [np.ones((2, 6), "float32"), np.zeros((2, 6), "float32")]
    states = cell.get_initial_state(memory, cell_state=h0)
    np.testing.assert_array_equal(to_numpy(states[0]), 1.0)
    rnn = keras.layers.RNN(cell, return_sequences=True)
    expected = to_numpy(rnn(x, initial_state=states))
    clone = keras_attn.AttentionWrapperCell.from_config(cell.get_config())
    clone_rnn = keras.layers.RNN(clone, return_sequences=True)
    clone_rnn(x, initial_state=clone.get_initial_state(memory, cell_state=h0))
    clone.set_weights(cell.get_weights())
    got = to_numpy(clone_rnn(x, initial_state=clone.get_initial_state(memory, cell_state=h0)))
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_linear_attention_layer_as_tf_addons(rng):
    # TF-Addons' attention layer is W_c [c; h], no activation: the option ports it.
    memory = rng.normal(size=(2, 5, 8)).astype("float32")
    x = rng.normal(size=(2, 4)).astype("float32")
    outputs, weights = {}, None
    for activation in ("tanh", None):
        cell = keras_attn.AttentionWrapperCell(
            keras.layers.GRUCell(6), keras_attn.LuongAttention("general"), memory_size=8,
            attention_layer_size=7, attention_layer_activation=activation,
        )
        cell(x, cell.get_initial_state(memory))
        if weights is not None:  # the linear cell gets the tanh cell's weights
            cell.set_weights(weights)
        weights = cell.get_weights()
        states = cell.get_initial_state(memory)  # the keys, projected with these weights
        output, new_states = cell(x, states)
        h = to_numpy(new_states[0])
        context = to_numpy(cell.attention(new_states[0], memory))
        w_c = to_numpy(cell.attention_layer.kernel)
        outputs[activation] = (to_numpy(output), np.concatenate([context, h], -1) @ w_c)
    np.testing.assert_allclose(outputs[None][0], outputs[None][1], atol=1e-5)
    np.testing.assert_allclose(outputs["tanh"][0], np.tanh(outputs["tanh"][1]), atol=1e-5)
    clone = keras_attn.AttentionWrapperCell.from_config(cell.get_config())
    assert clone.attention_layer_activation is None
    with pytest.raises(ValueError, match="`attention_layer_activation` must be a Keras"):
        keras_attn.AttentionWrapperCell(keras.layers.GRUCell(4), keras_attn.LuongAttention(),
                                        memory_size=8, attention_layer_activation="wiggly")


def test_bad_arguments(rng):
    with pytest.raises(TypeError, match="`attention` must be a keras_attn.Attention"):
        keras_attn.AttentionWrapperCell(keras.layers.GRUCell(4), keras.layers.Dense(3), memory_size=4)
    cell = keras_attn.AttentionWrapperCell(
        keras.layers.GRUCell(4), keras_attn.LuongAttention("general"), memory_size=8
    )
    with pytest.raises(ValueError, match=r"`memory` must have 8 features"):
        cell.get_initial_state(rng.normal(size=(2, 3, 5)).astype("float32"))
    with pytest.raises(ValueError, match=r"`memory` must have rank 3"):
        cell.get_initial_state(rng.normal(size=(2, 8)).astype("float32"))
    with pytest.raises(TypeError, match=r"`memory` must be a floating-point tensor; received dtype int32"):
        cell.get_initial_state(np.ones((2, 3, 8), "int32"))
    rnn = keras.layers.RNN(cell)
    with pytest.raises(ValueError, match=r"call the RNN with `initial_state=cell.get_initial_state"):
        rnn(rng.normal(size=(2, 3, 4)).astype("float32"))


def test_a_layer_given_for_the_cell_is_refused_with_what_to_pass():
    with pytest.raises(TypeError, match=r"`cell` must be an RNN cell with `state_size` \(such as "
                                        r"keras.layers.GRUCell\); received GRU, a layer that runs "
                                        r"a cell over a sequence: pass its cell"):
        keras_attn.AttentionWrapperCell(keras.layers.GRU(8), keras_attn.LuongAttention(),
                                        memory_size=8)


def test_a_cell_state_of_the_wrong_width_is_named():
    cell = keras_attn.AttentionWrapperCell(keras.layers.GRUCell(8),
                                           keras_attn.BahdanauAttention(5), memory_size=6)
    memory = np.zeros((2, 4, 6), "float32")
    cell.get_initial_state(memory, cell_state=np.zeros((2, 8), "float32"))  # fits
    with pytest.raises(ValueError, match=r"`cell_state\[0\]` must have 8 features, the cell's "
                                         r"state size; received shape \(2, 6\)"):
        cell.get_initial_state(memory, cell_state=np.zeros((2, 6), "float32"))


@pytest.mark.parametrize("input_feeding", [True, False])
def test_a_cell_with_dropout_trains_in_a_compiled_model_twice(rng, input_feeding):
    # The wrapped cell's dropout masks were made inside the recurrent loop and cached:
    # the second compiled call (TensorFlow) used a tensor of the first one's graph.
    memory = rng.normal(size=(4, 6, 12)).astype("float32")
    inputs = rng.normal(size=(4, 5, 7)).astype("float32")
    cell = keras_attn.AttentionWrapperCell(
        keras.layers.GRUCell(12, dropout=0.3, recurrent_dropout=0.2),
        keras_attn.BahdanauAttention(8), memory_size=12, attention_layer_size=10,
        input_feeding=input_feeding)

    class Decoder(keras.layers.Layer):
        def call(self, x, memory, training=None):
            states = cell.get_initial_state(memory)
            return cell.call_sequence(x, states, training=training)

    x_in, m_in = keras.Input((5, 7)), keras.Input((6, 12))
    model = keras.Model([x_in, m_in], keras.layers.Dense(1)(Decoder()(x_in, m_in)))
    model.compile("adam", "mse")
    target = np.zeros((4, 5, 1), "float32")
    for _ in range(2):  # two fits: two traced graphs
        history = model.fit([inputs, memory], target, epochs=2, batch_size=2, verbose=0)
        assert np.all(np.isfinite(history.history["loss"]))
    # Inference: no dropout, the same output twice.
    first, second = model.predict([inputs, memory], verbose=0), model.predict(
        [inputs, memory], verbose=0)
    np.testing.assert_array_equal(first, second)


def test_a_cell_with_dropout_inside_a_users_rnn_trains_twice(rng):
    memory = rng.normal(size=(4, 6, 12)).astype("float32")
    inputs = rng.normal(size=(4, 5, 7)).astype("float32")
    cell = keras_attn.AttentionWrapperCell(
        keras.layers.GRUCell(12, dropout=0.3), keras_attn.BahdanauAttention(8),
        memory_size=12, attention_layer_size=10)

    class Decoder(keras.layers.Layer):
        def call(self, x, memory, training=None):
            return keras.layers.RNN(cell, return_sequences=True)(
                x, initial_state=cell.get_initial_state(memory), training=training)

    x_in, m_in = keras.Input((5, 7)), keras.Input((6, 12))
    model = keras.Model([x_in, m_in], keras.layers.Dense(1)(Decoder()(x_in, m_in)))
    model.compile("adam", "mse")
    for _ in range(2):
        history = model.fit([inputs, memory], np.zeros((4, 5, 1), "float32"), epochs=1,
                            batch_size=2, verbose=0)
        assert np.all(np.isfinite(history.history["loss"]))
