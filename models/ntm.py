"""A sequence model around `keras_attn.memory.NTMCell` for bit-vector tasks.

`sequence (B, T, input_bits)` → logits `(B, T, output_bits)` (a sigmoid gives the
bit probabilities). The cost is in bits per sequence: the binary cross-entropy in
bits, summed over the steps and bits of the output part (the target's last
channel marks those steps) and averaged over the batch.
"""

import dataclasses
import math

import keras
from keras import ops

from keras_attn.memory import NTMCell
from keras_attn.models.compiling import compile_with_built_optimizer
from keras_attn.models.config import check_integer_fields


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


@dataclasses.dataclass
class NTMConfig:
    input_bits: int = 9
    output_bits: int = 8
    memory_size: int = 128
    memory_width: int = 20
    read_heads: int = 1
    write_heads: int = 1
    controller: str = "lstm"
    controller_units: int = 100
    shift_range: int = 1
    memory_init: str = "constant"
    clip_value: float = 20.0

    def __post_init__(self):
        check_integer_fields(self, floors={"write_heads": 0, "shift_range": 0})


def bit_sequence_model(cell, input_bits, output_bits, name):
    """`{"sequence"} → logits`: `cell` (with `return_weightings=True`) run over the
    steps by a `keras.layers.RNN` named `name`, its first `output_bits` channels out."""
    sequence = keras.Input((None, input_bits), name="sequence")
    outputs = keras.layers.RNN(cell, return_sequences=True, name=name)(sequence)
    logits = FirstChannels(output_bits, name="logits")(outputs)
    return keras.Model(sequence, logits, name=f"{name}_model")


def build_ntm(config):
    """The training model `{"sequence"} → logits`; `with_weightings` adds the heads'."""
    cell = NTMCell(
        units=config.output_bits,
        memory_size=config.memory_size,
        memory_width=config.memory_width,
        read_heads=config.read_heads,
        write_heads=config.write_heads,
        controller=config.controller,
        controller_units=config.controller_units,
        shift_range=config.shift_range,
        memory_init=config.memory_init,
        clip_value=config.clip_value,
        return_weightings=True,
        name="ntm_cell",
    )
    return bit_sequence_model(cell, config.input_bits, config.output_bits, "ntm")


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
