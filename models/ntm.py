"""A sequence model around `keras_attn.memory.NTMCell` for bit-vector tasks.

`sequence (B, T, input_bits)` → logits `(B, T, output_bits)` (a sigmoid gives the
bit probabilities). The cost is in bits per sequence: the binary cross-entropy in
bits, summed over the steps and bits of the output part (the target's last
channel marks those steps) and averaged over the batch.
"""

import math

import keras
from keras import ops

from keras_attn.memory import NTMCell
from keras_attn.models.compiling import compile_with_built_optimizer
from keras_attn.models.configured import ConfiguredModel


@keras.saving.register_keras_serializable(package="keras_attn_models")
class FirstChannels(keras.layers.Layer):
    """`x[..., :count]`: the logits in front of the cell's weightings."""

    def __init__(self, count, **kwargs):
        super().__init__(**kwargs)
        self.count = int(count)

    def call(self, x):
        return x[..., : self.count]

    def compute_output_shape(self, shape):
        return (*shape[:-1], self.count)

    def get_config(self):
        return {**super().get_config(), "count": self.count}


def bit_sequence_graph(cell, input_bits, output_bits, name):
    """`(sequence input, logits)`: `cell` (with `return_weightings=True`) run over the
    steps by a `keras.layers.RNN` named `name`, its first `output_bits` channels out."""
    sequence = keras.Input((None, input_bits), name="sequence")
    outputs = keras.layers.RNN(cell, return_sequences=True, name=name)(sequence)
    return sequence, FirstChannels(output_bits, name="logits")(outputs)


@keras.saving.register_keras_serializable(package="keras_attn_models")
class NTMSequenceModel(ConfiguredModel):
    """The training model `{"sequence"} → logits` around one `NTMCell`;
    `with_weightings` adds the heads' weightings.

    Args:
        input_bits: channels of the input sequence (the task's bits and markers).
        output_bits: channels of the output, the logits of the target bits.
        memory_size, memory_width, read_heads, write_heads, controller,
            controller_units, shift_range, memory_init, clip_value: as `NTMCell`'s.

    Example:

    >>> from keras_attn.models.ntm import NTMSequenceModel
    >>> model = NTMSequenceModel(memory_size=16, controller_units=32)
    >>> model.output.shape
    (None, None, 8)
    """

    INTEGER_FLOORS = {"write_heads": 0, "shift_range": 0}

    def __init__(self, input_bits: int = 9, output_bits: int = 8, memory_size: int = 128,
                 memory_width: int = 20, read_heads: int = 1, write_heads: int = 1,
                 controller="lstm", controller_units: int = 100, shift_range: int = 1,
                 memory_init="constant", clip_value=20.0, **kwargs):
        cell = NTMCell(
            units=output_bits,
            memory_size=memory_size,
            memory_width=memory_width,
            read_heads=read_heads,
            write_heads=write_heads,
            controller=controller,
            controller_units=controller_units,
            shift_range=shift_range,
            memory_init=memory_init,
            clip_value=clip_value,
            return_weightings=True,
            name="ntm_cell",
        )
        kwargs.setdefault("name", "ntm_model")
        super().__init__(*bit_sequence_graph(cell, input_bits, output_bits, "ntm"), **kwargs)


def with_weightings(model):
    """The same weights, returning (probabilities, read weightings, write weightings).

    Works for any model here whose memory cell (`NTMCell`, `DNCCell`) runs in a
    `keras.layers.RNN` and has `split_output`.
    """
    rnn = next(layer for layer in model.layers if isinstance(layer, keras.layers.RNN))
    _, reads, writes = rnn.cell.split_output(rnn.output)
    return keras.Model(model.inputs, [ops.sigmoid(model.output), reads, writes])


def bits_per_sequence(y_true, y_pred):
    """Per sequence: Σ over masked steps and bits of the binary cross-entropy, in bits.

    `y_true` is `(B, T, bits + 1)`: the target bits, then 1 on the steps that count.
    """
    target, counted = y_true[..., :-1], y_true[..., -1:]
    logits = ops.cast(y_pred, "float32")
    # log(1 + e^x) − x·t, the stable form of the cross-entropy with logits.
    nats = ops.softplus(logits) - logits * target
    return ops.sum(nats * counted, axis=(1, 2)) / math.log(2.0)


def bit_errors(y_true, y_pred):
    """Per sequence: the number of output bits wrong after thresholding at 0.5."""
    target, counted = y_true[..., :-1], y_true[..., -1:]
    wrong = ops.cast(ops.not_equal(ops.cast(y_pred > 0, "float32"), target), "float32")
    return ops.sum(wrong * counted, axis=(1, 2))


def compile_ntm(model, learning_rate=1e-4, clipnorm=10.0, jit_compile=True):
    """RMSprop (momentum 0.9), as Graves et al. and the reference implementations."""
    return compile_with_built_optimizer(
        model,
        optimizer=keras.optimizers.RMSprop(learning_rate, momentum=0.9, clipnorm=clipnorm),
        loss=bits_per_sequence,
        metrics=[bit_errors],
        jit_compile=jit_compile,
    )
