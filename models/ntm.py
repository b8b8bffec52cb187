"""A sequence model around `keras_attn.memory.NTMCell` for bit-vector tasks, and what
the bit-sequence models (NTM and DNC) share from a script.

`sequence (B, T, input_bits)` → logits `(B, T, output_bits)` (a sigmoid gives the
bit probabilities). The cost is in bits per sequence: the binary cross-entropy in
bits, summed over the steps and bits of the output part (the target's last
channel marks those steps) and averaged over the batch. `BitSequenceModel` gives
both models `compile()` with the command line's recipe, `generate(sequences)` →
the output bits and `export(path)` → the served SavedModel.
"""

import math

import keras
import numpy as np
from keras import ops

from keras_attn import _validation
from keras_attn.memory import NTMCell
from keras_attn.models.compiling import compile_with_built_optimizer
from keras_attn.models.configured import (
    ConfiguredModel,
    check_export_arguments,
    check_export_backend,
    write_export_meta,
)

DEFAULT_LEARNING_RATE = 3e-4  # RMSprop, momentum 0.9: the command line's default


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


def check_bit_sequences(sequences, input_bits, name="sequences"):
    """`sequences` as float32 `(batch, steps, input_bits)` (one `(steps, input_bits)`
    sequence gets a batch axis), finite and not empty, or a `ValueError` naming the
    layout and what was received."""
    sequences = np.asarray(sequences, dtype="float32")
    if sequences.ndim == 2:
        sequences = sequences[None]
    if sequences.ndim != 3 or sequences.shape[-1] != input_bits:
        raise ValueError(f"{name} must be (steps, {input_bits}) or (batch, steps, "
                         f"{input_bits}): {input_bits} channels a step, as the model was "
                         f"trained; received shape {sequences.shape}.")
    if sequences.shape[1] == 0:
        raise ValueError(f"{name} has no steps (shape {sequences.shape}).")
    if not np.all(np.isfinite(sequences)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return sequences


class BitSequenceModel(ConfiguredModel):
    """Base of the bit-sequence models: `{"sequence"} → logits` (a subclass takes
    `input_bits`), with

    * `compile()` with no arguments: RMSprop (3e-4, momentum 0.9, gradients clipped
      at norm 10), the cost in bits per sequence (`bits_per_sequence`) and
      `bit_errors`, as `keras-attn train ntm-*` trains;
    * `generate(sequences)` → the output bits, 0 or 1, `(batch, steps, output_bits)`;
    * `export(path)` → the served SavedModel (`serving_archive`).
    """

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        if optimizer == "auto":
            optimizer = keras.optimizers.RMSprop(DEFAULT_LEARNING_RATE, momentum=0.9,
                                                 clipnorm=10.0)
        super().compile(optimizer=optimizer,
                        loss=bits_per_sequence if loss == "auto" else loss,
                        metrics=[bit_errors] if metrics == "auto" else metrics, **kwargs)

    def generate(self, sequences, threshold=0.5, batch_size=64):
        """The output bits for `sequences` (`(steps, input_bits)` or a batch of
        them): 1 where the bit's probability is above `threshold`, as `int8`."""
        threshold = _validation.check_number("threshold", threshold, high=1.0)
        sequences = check_bit_sequences(sequences, self.input_bits)
        logits = self.predict(sequences, batch_size=batch_size, verbose=0)
        return (np.asarray(logits, "float32") > math.log(threshold / (1 - threshold))
                ).astype("int8")

    def serving_archive(self, input_check=None):
        """The served SavedModel as a `keras.export.ExportArchive` (TensorFlow backend).

        `serving_default(sequence)`, `sequence` float32 `[batch, steps, input_bits]`
        (any number of steps, longer than trained included): returns `output` (bit
        probabilities `[batch, steps, output_bits]`), `read_weightings` and
        `write_weightings` (`[batch, steps, heads, memory_size]`) and `valid`
        (`[batch]`). A sequence holding NaN or an infinity is not run (`valid`
        false, its outputs and weightings 0; the other sequences are unaffected);
        zero steps give empty outputs. `input_check`, if given, is applied to the
        served tensor first (the command line's export adds run-time layout checks
        there, for clients that send other shapes).
        """
        check_export_backend()
        reader = with_weightings(self)
        output_bits, memory_size = self.output_bits, self.memory_size
        read_shape = (self.read_heads, memory_size)
        write_shape = (getattr(self, "write_heads", 1), memory_size)

        def serve(sequence):
            if input_check is not None:
                sequence = input_check(sequence)
            finite = ops.isfinite(sequence)
            valid = ops.all(finite, axis=(1, 2))
            clean = ops.where(finite, sequence, 0.0)
            batch, steps = ops.shape(sequence)[0], ops.shape(sequence)[1]

            def run():
                return [ops.cast(t, "float32") for t in reader(clean)]

            def nothing():
                return [ops.zeros((batch, 0, output_bits)), ops.zeros((batch, 0, *read_shape)),
                        ops.zeros((batch, 0, *write_shape))]

            # The RNN needs a first step to trace its loop; zero steps skip it.
            output, reads, writes = ops.cond(steps > 0, run, nothing)
            kept = ops.cast(valid, "float32")[:, None, None]
            return {"output": output * kept, "read_weightings": reads * kept[..., None],
                    "write_weightings": writes * kept[..., None], "valid": valid}

        archive = keras.export.ExportArchive()
        archive.track(reader)
        archive.add_endpoint("serving_default", serve, input_signature=[keras.InputSpec(
            shape=(None, None, self.input_bits), dtype="float32", name="sequence")])
        return archive

    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None,
               task=None, **kwargs):
        """Writes the served SavedModel (`serving_archive`) to `filepath`; with `task`
        (the `keras-attn` task it was trained for, e.g. `"ntm-copy"`), `assets.extra/`
        too, so `keras-attn predict` and `explore` read it as that task's export."""
        check_export_arguments("a bit-sequence model", "`sequence`", format, input_signature,
                               kwargs)
        self.serving_archive().write_out(filepath, verbose=False)
        if task is not None:
            settings = {"architecture": self.ARCHITECTURE, "seed": 0, "test_sequences": 1000,
                        "input_bits": self.input_bits, "output_bits": self.output_bits,
                        "memory_size": self.memory_size, "read_heads": self.read_heads,
                        "write_heads": getattr(self, "write_heads", 1)}
            write_export_meta(self, filepath, str(task), settings)
        if verbose:
            print(f"Saved the bit-sequence model's serving SavedModel to {filepath}")
        return filepath


@keras.saving.register_keras_serializable(package="keras_attn_models")
class NTMSequenceModel(BitSequenceModel):
    """The training model `{"sequence"} → logits` around one `NTMCell`;
    `with_weightings` adds the heads' weightings.

    Args:
        input_bits: channels of the input sequence (the task's bits and markers).
        output_bits: channels of the output, the logits of the target bits.
        memory_size, memory_width, read_heads, write_heads, controller,
            controller_units, shift_range, memory_init, clip_value,
            state_gradient_clip: as `NTMCell`'s.

    Example:

    >>> from keras_attn.models.ntm import NTMSequenceModel
    >>> model = NTMSequenceModel(memory_size=16, controller_units=32)
    >>> model.output.shape
    (None, None, 8)
    """

    INTEGER_FLOORS = {"write_heads": 0, "shift_range": 0}
    ARCHITECTURE = "ntm"

    def __init__(self, input_bits: int = 9, output_bits: int = 8, memory_size: int = 128,
                 memory_width: int = 20, read_heads: int = 1, write_heads: int = 1,
                 controller="lstm", controller_units: int = 100, shift_range: int = 1,
                 memory_init="constant", clip_value=20.0, state_gradient_clip=None,
                 **kwargs):
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
            state_gradient_clip=state_gradient_clip,
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


@keras.saving.register_keras_serializable(package="keras_attn_models")
def bits_per_sequence(y_true, y_pred):
    """Per sequence: Σ over masked steps and bits of the binary cross-entropy, in bits.

    `y_true` is `(B, T, bits + 1)`: the target bits, then 1 on the steps that count.
    """
    target, counted = y_true[..., :-1], y_true[..., -1:]
    logits = ops.cast(y_pred, "float32")
    # log(1 + e^x) − x·t, the stable form of the cross-entropy with logits.
    nats = ops.softplus(logits) - logits * target
    return ops.sum(nats * counted, axis=(1, 2)) / math.log(2.0)


@keras.saving.register_keras_serializable(package="keras_attn_models")
def bit_errors(y_true, y_pred):
    """Per sequence: the number of output bits wrong after thresholding at 0.5."""
    target, counted = y_true[..., :-1], y_true[..., -1:]
    wrong = ops.cast(ops.not_equal(ops.cast(y_pred > 0, "float32"), target), "float32")
    return ops.sum(wrong * counted, axis=(1, 2))


def compile_ntm(model, learning_rate=1e-4, clipnorm=10.0, jit_compile=True):
    """`model.compile()` (its cost and metric) with RMSprop (momentum 0.9, as Graves et
    al. and the reference implementations) at this rate and clipping."""
    return compile_with_built_optimizer(
        model,
        optimizer=keras.optimizers.RMSprop(learning_rate, momentum=0.9, clipnorm=clipnorm),
        jit_compile=jit_compile,
    )
