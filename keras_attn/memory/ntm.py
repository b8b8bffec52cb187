"""The neural Turing machine cell (Graves, Wayne & Danihelka, 2014).

A controller (LSTM or feed-forward) reads the input and the previous reads, and
emits, for each head, a key `k`, a strength `β = softplus(·)`, a gate
`g = sigmoid(·)`, a shift distribution `s = softmax(·)` over `2r + 1` offsets and
a sharpening `γ = 1 + softplus(·)`; write heads also emit an erase vector
`e = sigmoid(·)` and an add vector `a`. The heads address the memory with
`keras_attn.memory.addressing` (content, then location), the read heads read the
memory as it was, then the write heads erase and add. The step's output is a
linear map of the controller output and the new reads.
"""

import keras
from keras import ops

from keras_attn import _validation
from keras_attn.choices import NTM_CONTROLLERS, NTM_MEMORY_INITS
from keras_attn.memory import addressing
from keras_attn.ops import clip_gradient

_PACKAGE = "keras_attn"


@keras.saving.register_keras_serializable(package=_PACKAGE)
class NTMCell(keras.layers.Layer):
    """A neural Turing machine step, for `keras.layers.RNN`.

    Args:
        units: size of the step's output (logits; apply a sigmoid for bits).
        memory_size: `N`, the number of memory rows.
        memory_width: `D`, the size of a row.
        read_heads, write_heads: numbers of heads (≥ 1 and ≥ 0).
        controller: `"lstm"` or `"feedforward"` (a ReLU `Dense`).
        controller_units: the controller's size.
        shift_range: `r`: shifts by `−r … r` slots.
        memory_init: `"constant"` (every cell `memory_init_value`; the most reliable
            choice in Collier & Beel 2018), `"learned"` (a trained `N × D` matrix) or
            `"random"` (N(0, memory_init_value²) per sequence).
        memory_init_value: the constant, or the random init's standard deviation.
        clip_value: the controller output is clipped to `[−clip, clip]`
            (`None`: no clipping).
        state_gradient_clip: the gradient each step passes back to the step before
            (through the memory, the reads, the weightings and the controller
            state) is clipped elementwise to `[−c, c]`, as Graves (2013) clipped an
            LSTM's derivatives to [−10, 10] (`None`: not clipped). Content
            addressing feeds the memory back into its own writes, and on a long
            sequence that loop can multiply the gradient by a constant factor per
            step until it overflows float32; the forward pass is unchanged.
        return_weightings: also output the read and write weightings of the step.

    Call arguments:
        inputs: `(B, input_size)`, one step.
        states: the list from `get_initial_state` (controller state, memory,
            reads, read weightings, write weightings).

    Returns:
        `(output, new_states)`. `output` is `(B, units)`, or with
        `return_weightings` `(B, units + (read_heads + write_heads) · N)`:
        the logits, then the read weightings, then the write weightings (split
        them with `split_output`).

    Example:
    >>> cell = keras_attn.NTMCell(units=8, memory_size=16, memory_width=10)
    >>> rnn = keras.layers.RNN(cell, return_sequences=True)
    >>> tuple(rnn(ops.zeros((2, 5, 9))).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        units,
        memory_size=128,
        memory_width=20,
        read_heads=1,
        write_heads=1,
        controller="lstm",
        controller_units=100,
        shift_range=1,
        memory_init="constant",
        memory_init_value=1e-6,
        clip_value=20.0,
        state_gradient_clip=None,
        return_weightings=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        units = _validation.check_integer("units", units)
        memory_size = _validation.check_integer("memory_size", memory_size)
        memory_width = _validation.check_integer("memory_width", memory_width)
        read_heads = _validation.check_integer("read_heads", read_heads)
        write_heads = _validation.check_integer("write_heads", write_heads, least=0)
        controller_units = _validation.check_integer("controller_units", controller_units)
        shift_range = _validation.check_integer("shift_range", shift_range, least=0)
        if controller not in NTM_CONTROLLERS:
            raise ValueError(
                f"`controller` must be one of {NTM_CONTROLLERS}; received {controller!r}."
            )
        if memory_init not in NTM_MEMORY_INITS:
            raise ValueError(
                f"`memory_init` must be one of {NTM_MEMORY_INITS}; received {memory_init!r}."
            )
        if 2 * shift_range + 1 > memory_size:
            raise ValueError(
                f"`shift_range` {shift_range} needs 2·r + 1 ≤ memory_size={memory_size}."
            )
        self.units = units
        self.memory_size = memory_size
        self.memory_width = memory_width
        self.read_heads = read_heads
        self.write_heads = write_heads
        self.controller = controller
        self.controller_units = controller_units
        self.shift_range = shift_range
        self.memory_init = memory_init
        self.memory_init_value = _validation.check_number(
            "memory_init_value", memory_init_value, low=None
        )
        self.clip_value = _validation.check_number(
            "clip_value", clip_value, allow_none=True
        )
        self.state_gradient_clip = _validation.check_number(
            "state_gradient_clip", state_gradient_clip, allow_none=True
        )
        self.return_weightings = return_weightings
        self.seed_generator = keras.random.SeedGenerator()
        if controller == "lstm":
            self.controller_cell = keras.layers.LSTMCell(
                controller_units, dtype=self.dtype_policy, name="controller"
            )
        else:
            self.controller_cell = keras.layers.Dense(
                controller_units, activation="relu", dtype=self.dtype_policy, name="controller"
            )
        shifts = 2 * shift_range + 1
        # Per head: key, strength, gate, shift logits, sharpening; writes add erase and add.
        self._address_size = memory_width + 3 + shifts
        head_params = (read_heads + write_heads) * self._address_size
        head_params += write_heads * 2 * memory_width
        self.head_dense = keras.layers.Dense(head_params, dtype=self.dtype_policy, name="heads")
        self.output_dense = keras.layers.Dense(units, dtype=self.dtype_policy, name="output")
        n, d = memory_size, memory_width
        controller_state = [controller_units, controller_units] if controller == "lstm" else []
        self.state_size = controller_state + [(n, d), (read_heads, d), (read_heads, n),
                                              (max(write_heads, 1), n)]
        # What keras.layers.RNN reads to size the outputs.
        self.output_size = units + (
            (read_heads + write_heads) * memory_size if return_weightings else 0
        )

    def build(self, input_shape):
        _validation.check_rank("inputs", input_shape, 2, self.name)
        controller_input = input_shape[-1] + self.read_heads * self.memory_width
        self.controller_cell.build((input_shape[0], controller_input))
        self.head_dense.build((input_shape[0], self.controller_units))
        self.output_dense.build(
            (input_shape[0], self.controller_units + self.read_heads * self.memory_width)
        )
        if self.memory_init == "learned":
            self.initial_memory = self.add_weight(
                name="initial_memory",
                shape=(self.memory_size, self.memory_width),
                initializer=keras.initializers.RandomNormal(stddev=0.5),
            )
        self.built = True

    def get_initial_state(self, batch_size):
        n, d, dtype = self.memory_size, self.memory_width, self.compute_dtype
        if self.memory_init == "learned":
            learned = ops.cast(self.initial_memory, dtype)[None]
            memory = ops.broadcast_to(learned, (batch_size, n, d))
        elif self.memory_init == "random":
            memory = self.memory_init_value * keras.random.normal(
                (batch_size, n, d), dtype=dtype, seed=self.seed_generator
            )
        else:
            memory = ops.full((batch_size, n, d), self.memory_init_value, dtype=dtype)
        controller = (
            [ops.zeros((batch_size, self.controller_units), dtype)] * 2
            if self.controller == "lstm" else []
        )
        # Every head starts focused on row 0. A constant memory makes content
        # weightings uniform, and a uniform (or zero) previous weighting stays
        # uniform under shifting, so heads that start unfocused write every row
        # alike and the rows never become distinguishable.
        first_row = ops.one_hot(ops.zeros((batch_size,), "int32"), n, dtype=dtype)[:, None]
        return controller + [
            memory,
            ops.zeros((batch_size, self.read_heads, d), dtype),
            ops.repeat(first_row, self.read_heads, axis=1),
            ops.repeat(first_row, max(self.write_heads, 1), axis=1),
        ]

    def _head_parameters(self, params, heads, offset):
        """Splits `heads` heads' addressing parameters off `params` at `offset`."""
        d, shifts = self.memory_width, 2 * self.shift_range + 1
        size = self._address_size
        block = ops.reshape(params[:, offset : offset + heads * size], (-1, heads, size))
        keys = block[..., :d]
        strengths = ops.softplus(block[..., d])
        gates = ops.sigmoid(block[..., d + 1])
        shift = ops.softmax(block[..., d + 2 : d + 2 + shifts], axis=-1)
        gammas = 1.0 + ops.softplus(block[..., d + 2 + shifts])
        return (keys, strengths, gates, shift, gammas), offset + heads * size

    def call(self, inputs, states, training=None):
        if self.state_gradient_clip is not None:
            states = [clip_gradient(state, self.state_gradient_clip) for state in states]
        n_controller = 2 if self.controller == "lstm" else 0
        controller_state = list(states[:n_controller])
        memory, reads, read_weights, write_weights = states[n_controller:]
        batch = ops.shape(inputs)[0]
        controller_input = ops.concatenate(
            [inputs, ops.reshape(reads, (batch, self.read_heads * self.memory_width))], axis=-1
        )
        if self.controller == "lstm":
            hidden, controller_state = self.controller_cell(
                controller_input, controller_state, training=training
            )
        else:
            hidden = self.controller_cell(controller_input)
        if self.clip_value is not None:
            hidden = ops.clip(hidden, -self.clip_value, self.clip_value)
        params = self.head_dense(hidden)
        read_params, offset = self._head_parameters(params, self.read_heads, 0)
        read_weights = addressing.address(memory, read_weights, *read_params)
        new_reads = addressing.read(memory, read_weights)
        if self.write_heads:
            write_params, offset = self._head_parameters(params, self.write_heads, offset)
            write_weights = addressing.address(memory, write_weights, *write_params)
            d, h = self.memory_width, self.write_heads
            vectors = ops.reshape(params[:, offset : offset + 2 * h * d], (-1, h, 2, d))
            erase, add = ops.sigmoid(vectors[:, :, 0]), vectors[:, :, 1]
            memory = addressing.write(memory, write_weights, erase, add)
        flat_reads = ops.reshape(new_reads, (batch, self.read_heads * self.memory_width))
        output = self.output_dense(ops.concatenate([hidden, flat_reads], axis=-1))
        if self.return_weightings:
            pieces = [output, ops.reshape(read_weights, (batch, -1))]
            if self.write_heads:
                pieces.append(ops.reshape(write_weights, (batch, -1)))
            output = ops.concatenate(pieces, axis=-1)
        return output, controller_state + [memory, new_reads, read_weights, write_weights]

    def split_output(self, outputs):
        """`(…, output_size)` → (logits, read weightings `(…, R, N)`, write `(…, W, N)`)."""
        n, r, w = self.memory_size, self.read_heads, self.write_heads
        logits = outputs[..., : self.units]
        rest = outputs[..., self.units :]
        # A Reshape layer, so symbolic outputs with unknown batch and time work too.
        middle = (-1,) * (len(outputs.shape) - 2)
        reads = keras.layers.Reshape((*middle, r, n))(rest[..., : r * n])
        writes = keras.layers.Reshape((*middle, w, n))(rest[..., r * n : (r + w) * n])
        return logits, reads, writes

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            memory_size=self.memory_size,
            memory_width=self.memory_width,
            read_heads=self.read_heads,
            write_heads=self.write_heads,
            controller=self.controller,
            controller_units=self.controller_units,
            shift_range=self.shift_range,
            memory_init=self.memory_init,
            memory_init_value=self.memory_init_value,
            clip_value=self.clip_value,
            state_gradient_clip=self.state_gradient_clip,
            return_weightings=self.return_weightings,
        )
        return config
