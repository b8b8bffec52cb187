"""An RNN cell wrapped with attention over an encoder memory (the decoder of seq2seq)."""

import inspect

import keras
from keras import ops

from keras_attn import _validation
from keras_attn.attention import Attention


def _flat_state_size(cell):
    size = cell.state_size
    return list(size) if isinstance(size, (list, tuple)) else [size]


@keras.saving.register_keras_serializable(package="keras_attn")
class AttentionWrapperCell(keras.layers.Layer):
    """Wraps an RNN cell with attention over a memory: the Keras 3 `AttentionWrapper`.

    Per step `t`, with the previous attention vector `a_{t-1}` (TF-Addons'
    `AttentionWrapper` semantics, Luong et al. 2015 §3.3):

        x_t  = [y_t; a_{t-1}]              (input feeding; `y_t` alone without it)
        h_t  = cell(x_t, s_{t-1})
        c_t, α_t = attention(h_t, memory)  (keys projected once per sequence)
        a_t  = tanh(W_c [c_t; h_t])        (Luong's attentional state h̃, with
                                           `attention_layer_size`; else a_t = c_t;
                                           `attention_layer_activation=None`: W_c [c_t; h_t],
                                           TF-Addons' linear attention layer)
        out  = a_t                         (`output_attention=True`, Luong style)
               h_t                         (`output_attention=False`, Bahdanau style)

    The encoder memory, its precomputed keys and its padding mask travel as
    states, because Keras 3's `RNN` has no `constants=`: build them once with
    `get_initial_state(memory, mask, cell_state)`. Inside `keras.layers.RNN` the
    cell runs teacher-forced over a whole target sequence; called directly it
    takes one decoding step. The last alignment `α_t` is a state too, so a
    decoding loop collects the alignment history step by step.

    Args:
        cell: any Keras RNN cell (`GRUCell`, `LSTMCell`, `SimpleRNNCell`, ...).
        attention: a `keras_attn.Attention` layer (e.g. `BahdanauAttention`,
            `LuongAttention`) whose query is the cell output.
        attention_layer_size: size of `W_c`; `None` uses the context as `a_t`.
        attention_layer_activation: the activation of `W_c`: `"tanh"` (Luong et
            al.'s h̃) or `None`, the linear layer of TF-Addons' `AttentionWrapper`
            (to port its weights exactly); any Keras activation name.
        input_feeding: concatenate `a_{t-1}` to each input.
        output_attention: output `a_t` (True) or the cell output `h_t` (False).
        memory_size: feature size `d` of the memory (the encoder outputs), so the
            attention weights exist from `build` on (needed to load a `.keras`).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(B, d_in)` step input.
        states: the list from `get_initial_state` (or the previous step).
        training: whether dropout is active.

    Returns:
        `(output, new_states)`.

    Example:

    >>> memory = np.random.rand(2, 6, 8).astype("float32")
    >>> cell = keras_attn.AttentionWrapperCell(
    ...     keras.layers.GRUCell(16), keras_attn.LuongAttention("general"),
    ...     memory_size=8, attention_layer_size=16)
    >>> rnn = keras.layers.RNN(cell, return_sequences=True)
    >>> states = cell.get_initial_state(memory, batch_size=2)
    >>> tuple(rnn(np.random.rand(2, 4, 5).astype("float32"), initial_state=states).shape)
    (2, 4, 16)
    """

    def __init__(
        self,
        cell,
        attention,
        memory_size,
        attention_layer_size=None,
        input_feeding=True,
        output_attention=True,
        attention_layer_activation="tanh",
        **kwargs,
    ):
        super().__init__(**kwargs)
        try:
            keras.activations.get(attention_layer_activation)
        except (ValueError, TypeError):
            raise ValueError(
                "`attention_layer_activation` must be a Keras activation or None (TF-Addons' "
                f"linear layer); received {attention_layer_activation!r}."
            ) from None
        self.attention_layer_activation = attention_layer_activation
        if isinstance(cell, dict):
            cell = keras.saving.deserialize_keras_object(cell)
        if isinstance(attention, dict):
            attention = keras.saving.deserialize_keras_object(attention)
        if not isinstance(attention, Attention):
            raise TypeError(
                "`attention` must be a keras_attn.Attention layer; received "
                f"{type(attention).__name__}."
            )
        if isinstance(cell, keras.layers.RNN) or not hasattr(cell, "state_size"):
            raise TypeError(
                "`cell` must be an RNN cell with `state_size` (such as keras.layers.GRUCell); "
                f"received {type(cell).__name__}"
                + (", a layer that runs a cell over a sequence: pass its cell"
                   if isinstance(cell, keras.layers.RNN) else "") + ".")
        self.cell = cell
        self.attention = attention
        self.attention_layer_size = _validation.check_integer(
            "attention_layer_size", attention_layer_size, allow_none=True
        )
        self.input_feeding = bool(input_feeding)
        self.output_attention = bool(output_attention)
        self.memory_size = _validation.check_integer("memory_size", memory_size)
        self.attention_layer = (
            keras.layers.Dense(
                self.attention_layer_size,
                activation=attention_layer_activation,
                use_bias=False,
                dtype=self.dtype_policy,
                name="attention_layer",
            )
            if self.attention_layer_size
            else None
        )
        self._cell_state_size = _flat_state_size(cell)
        self._attention_size = attention_layer_size or memory_size
        # Memory-shaped states have no fixed size; Keras reads these integers
        # only to make zero states, and the real ones come from get_initial_state.
        self.state_size = [*self._cell_state_size, self._attention_size, 1, 1, 1, 1]
        self.output_size = (
            self._attention_size if self.output_attention else self._cell_state_size[0]
        )

    @property
    def num_cell_states(self):
        return len(self._cell_state_size)

    def build(self, inputs_shape):
        batch = inputs_shape[0]
        step_input = inputs_shape[-1] + (self._attention_size if self.input_feeding else 0)
        if not self.cell.built:
            self.cell.build((batch, step_input))
        self._build_attention()

    def _build_attention(self):
        # Its sizes are known from the constructor, so `get_initial_state` can
        # build it even before `keras.layers.RNN` builds this cell.
        query_shape = (None, self._cell_state_size[0])
        if not self.attention.built:
            self.attention.build(query_shape, (None, None, self.memory_size))
        if self.attention_layer is not None and not self.attention_layer.built:
            self.attention_layer.build((None, self.memory_size + query_shape[-1]))

    @property
    def _takes_previous_alignment(self):
        return "previous_alignment" in inspect.signature(self.attention.call).parameters

    def get_initial_state(self, memory=None, mask=None, cell_state=None, batch_size=None):
        """The states for a sequence over `memory` `(B, T, d)`.

        Args:
            memory: encoder outputs.
            mask: optional `(B, T)` padding mask of the memory.
            cell_state: optional initial state(s) of the wrapped cell (e.g. a
                projection of the encoder's final state); zeros otherwise.
            batch_size: unused (the memory's batch is used); accepted so Keras
                can call this method.
        """
        if memory is None:
            raise ValueError(
                f"{self.name}: the states hold the encoder memory; call the RNN with "
                "`initial_state=cell.get_initial_state(memory, mask)`."
            )
        _validation.check_rank("memory", memory.shape, 3, self.name)
        _validation.check_dtype("floating", self.name, memory=memory)
        if memory.shape[-1] not in (None, self.memory_size):
            raise ValueError(
                f"{self.name}: `memory` must have {self.memory_size} features; "
                f"received shape {tuple(memory.shape)}."
            )
        self._build_attention()
        dtype = self.compute_dtype
        # Zeros shaped from the memory, so this also works on symbolic tensors.
        per_step = ops.zeros_like(ops.cast(memory[:, :, 0], dtype))  # (B, T)
        per_example = per_step[:, :1]  # (B, 1)

        def zeros(size):
            return ops.tile(per_example, (1, size))

        if cell_state is None:
            cell_state = [zeros(s) for s in self._cell_state_size]
        elif not isinstance(cell_state, (list, tuple)):
            cell_state = [cell_state]
        if len(cell_state) != self.num_cell_states:
            raise ValueError(
                f"{self.name}: the cell has {self.num_cell_states} states; received "
                f"{len(cell_state)} in `cell_state`."
            )
        for index, (state, size) in enumerate(zip(cell_state, self._cell_state_size,
                                                  strict=True)):
            if tuple(state.shape)[-1:] not in ((size,), (None,)):
                raise ValueError(
                    f"{self.name}: `cell_state[{index}]` must have {size} features, the "
                    f"cell's state size; received shape {tuple(state.shape)}.")
        keys = self.attention.precompute_keys(memory)
        mask = per_step + 1.0 if mask is None else ops.cast(mask, dtype)
        # A monotonic attention scans on from the last alignment: it starts at
        # position 0 (one-hot); the others ignore the previous alignment.
        first_position = ops.concatenate(
            [per_step[:, :1] + 1.0, per_step[:, 1:]], axis=-1
        )
        return [
            *cell_state,
            zeros(self._attention_size),
            first_position if self._takes_previous_alignment else per_step,
            memory,
            keys,
            mask,
        ]

    def call(self, inputs, states, training=None):
        n = self.num_cell_states
        cell_states = list(states[:n])
        previous_attention, previous_alignment, memory, keys, mask = states[n:]
        cell_inputs = (
            ops.concatenate([inputs, ops.cast(previous_attention, inputs.dtype)], axis=-1)
            if self.input_feeding
            else inputs
        )
        cell_kwargs = {"training": training} if self.cell._call_has_training_arg else {}
        # Inside a `keras.layers.RNN(wrapper)` the user built, nobody made the wrapped
        # cell's dropout masks before the loop: the cell makes them in this step, and
        # they are dropped after it (a fresh mask a step), never cached across graphs.
        masks_made_here = training and getattr(self.cell, "_dropout_mask", None) is None
        cell_output, new_cell_states = self.cell(
            cell_inputs, cell_states if n > 1 else cell_states[0], **cell_kwargs
        )
        if masks_made_here:
            self._reset_cell_dropout()
        if not isinstance(new_cell_states, (list, tuple)):
            new_cell_states = [new_cell_states]
        attention_kwargs = (
            {"previous_alignment": previous_alignment} if self._takes_previous_alignment else {}
        )
        context, alignment = self.attention(
            cell_output,
            memory,
            mask=ops.cast(mask, "bool"),
            precomputed_keys=keys,
            return_attention_scores=True,
            training=training,
            **attention_kwargs,
        )
        if self.attention_layer is not None:
            attention_vector = self.attention_layer(ops.concatenate([context, cell_output], -1))
        else:
            attention_vector = context
        output = attention_vector if self.output_attention else cell_output
        new_states = [
            *new_cell_states,
            attention_vector,
            ops.cast(alignment, mask.dtype),
            memory,
            keys,
            mask,
        ]
        return output, new_states

    def _prepare_cell_dropout(self, step_input, state, training):
        """Makes the wrapped cell's dropout masks (a Keras `DropoutRNNCell`'s) for one
        sequence, outside the recurrent loop."""
        if training and hasattr(self.cell, "get_dropout_mask"):
            self.cell.get_dropout_mask(step_input)
            self.cell.get_recurrent_dropout_mask(state)

    def _reset_cell_dropout(self):
        if hasattr(self.cell, "reset_dropout_mask"):
            self.cell.reset_dropout_mask()
            self.cell.reset_recurrent_dropout_mask()

    @property
    def parallel_over_time(self):
        """Whether `call_sequence` can attend for every step at once: nothing that
        attention produces feeds the next step (no input feeding, no monotonic
        alignment)."""
        return not self.input_feeding and not self._takes_previous_alignment

    def call_sequence(self, inputs, states, training=None):
        """The outputs `(B, T, output_size)` of a whole teacher-forced sequence.

        The same as running `call` step by step inside `keras.layers.RNN`; when
        `parallel_over_time`, the wrapped cell alone runs step by step and the
        attention (and `W_c`) then takes all `T` queries in one batched call,
        which leaves the sequential loop a plain RNN's (Luong et al. 2015's
        global attention without input feeding).

        Args:
            inputs: `(B, T, d_in)` step inputs.
            states: the list from `get_initial_state`.
            training: whether dropout is active.
        """
        if not self.parallel_over_time:
            # The wrapped cell's dropout masks are made here, once for the sequence
            # (Keras's RNN makes them only for the cell it is given, this wrapper):
            # made inside the loop, they would be cached tensors of the loop's graph.
            n = self.num_cell_states
            step = inputs[:, 0]
            if self.input_feeding:
                step = ops.concatenate([step, ops.cast(states[n], step.dtype)], axis=-1)
            self._prepare_cell_dropout(step, states[0], training)
            try:
                return keras.layers.RNN(self, return_sequences=True)(
                    inputs, initial_state=list(states), training=training
                )
            finally:
                self._reset_cell_dropout()
        n = self.num_cell_states
        memory, keys, mask = states[n + 2 :]
        # A fresh wrapper each call: it holds no weights (the cell has them), and
        # tracking it as an attribute would give the cell a second path in saved files.
        cell_outputs = keras.layers.RNN(self.cell, return_sequences=True)(
            inputs, initial_state=list(states[:n]) if n > 1 else states[0], training=training
        )
        context = self.attention(
            cell_outputs,
            memory,
            mask=ops.cast(mask, "bool"),
            precomputed_keys=keys,
            return_attention_scores=False,
            training=training,
        )
        if self.attention_layer is None:
            attention_vectors = context
        else:
            attention_vectors = self.attention_layer(
                ops.concatenate([context, ops.cast(cell_outputs, context.dtype)], -1)
            )
        return attention_vectors if self.output_attention else cell_outputs

    def get_config(self):
        return {
            **super().get_config(),
            "cell": keras.saving.serialize_keras_object(self.cell),
            "attention": keras.saving.serialize_keras_object(self.attention),
            "attention_layer_size": self.attention_layer_size,
            "input_feeding": self.input_feeding,
            "output_attention": self.output_attention,
            "memory_size": self.memory_size,
            "attention_layer_activation": self.attention_layer_activation,
        }
