"""Models around `keras_attn.memory.DNCCell`.

* `DNCSequenceModel`: bit-vector tasks, the same contract as `models/ntm.py` (whose
  cost, metric, compile step and `with_weightings` it shares): `sequence
  (B, T, input_bits)` → logits `(B, T, output_bits)`.
* `DNCQA`: bAbI question answering as in Graves et al. 2016 (Methods,
  "bAbI"): the story and the question are one sequence of words, each word a
  one-hot input, and the answer is read from the output at the question mark,
  a softmax over the whole vocabulary. Defaults: the paper's (LSTM controller
  of 256 units, N = 256 rows of W = 64, R = 4 read heads; RMSprop 1e-4,
  momentum 0.9).
"""

import keras
from keras import ops

from keras_attn.memory import DNCCell
from keras_attn.models.compiling import compile_with_built_optimizer
from keras_attn.models.memn2n.preprocessor import DNCQAPreprocessor
from keras_attn.models.memn2n.story_qa import StoryQAModel
from keras_attn.models.ntm import BitSequenceModel, bit_sequence_graph

_PACKAGE = "keras_attn_models"


@keras.saving.register_keras_serializable(package=_PACKAGE)
class DNCSequenceModel(BitSequenceModel):
    """The training model `{"sequence"} → logits` around one `DNCCell`;
    `models.ntm.with_weightings` adds the read and write weightings.

    Args:
        input_bits, output_bits: as `models.ntm.NTMSequenceModel`'s.
        memory_size, memory_width, read_heads, controller_units, clip_value: as
            `DNCCell`'s.

    Example:

    >>> from keras_attn.models.dnc import DNCSequenceModel
    >>> DNCSequenceModel(memory_size=16, controller_units=32).output.shape
    (None, None, 8)
    """

    ARCHITECTURE = "dnc"

    def __init__(self, input_bits: int = 9, output_bits: int = 8, memory_size: int = 64,
                 memory_width: int = 20, read_heads: int = 1, controller_units: int = 100,
                 clip_value=20.0, **kwargs):
        cell = DNCCell(
            units=output_bits,
            memory_size=memory_size,
            memory_width=memory_width,
            read_heads=read_heads,
            controller_units=controller_units,
            clip_value=clip_value,
            return_weightings=True,
            name="dnc_cell",
        )
        kwargs.setdefault("name", "dnc_model")
        super().__init__(*bit_sequence_graph(cell, input_bits, output_bits, "dnc"), **kwargs)


@keras.saving.register_keras_serializable(package=_PACKAGE)
class OneHotWords(keras.layers.Layer):
    """int ids `(B, T)` → one-hot float `(B, T, vocab_size)`: the paper's input."""

    def __init__(self, vocab_size, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = int(vocab_size)

    def call(self, ids):
        return ops.one_hot(ops.cast(ids, "int32"), self.vocab_size, dtype=self.compute_dtype)

    def compute_output_shape(self, shape):
        return (*shape, self.vocab_size)

    def get_config(self):
        return {**super().get_config(), "vocab_size": self.vocab_size}


@keras.saving.register_keras_serializable(package=_PACKAGE)
class OutputAtStep(keras.layers.Layer):
    """`(outputs (B, T, D), step (B,))` → `outputs[b, step[b]]` `(B, D)`, in float32.

    A step outside `[0, T)` is clipped to it (Keras's `take_along_axis` would
    otherwise read anything); the data pipeline and the export never make one.
    """

    def call(self, outputs, step):
        last = ops.shape(outputs)[1] - 1
        step = ops.clip(ops.cast(step, "int32"), 0, last)
        picked = ops.take_along_axis(outputs, step[:, None, None], axis=1)
        return ops.cast(picked[:, 0], "float32")

    def compute_output_shape(self, outputs_shape, step_shape):
        return (outputs_shape[0], outputs_shape[-1])


@keras.saving.register_keras_serializable(package=_PACKAGE)
class DNCQA(StoryQAModel):
    """`{"words" (B, T), "answer_step" (B,)} → answer logits (B, vocab_size)`.

    `words` are the story's and the question's word ids, right-padded with 0;
    `answer_step` is the index of the question mark. Padding after it cannot
    change the answer (the DNC reads left to right), so batches of different
    lengths are padded freely.

    Args:
        vocab_size: words in and out, padding included (at least 2; read from
            `preprocessor` when given).
        memory_size, memory_width, read_heads, controller_units, clip_value: as
            `DNCCell`'s; the defaults are the paper's.
        layer_norm, bypass_dropout, temporal_links: the robust DNC's options
            (Franke et al. 2018), as `DNCCell`'s; off by default.
        preprocessor: a `DNCQAPreprocessor`: the model then takes text:
            `fit(x={"story": stories, "question": questions}, y=answers)`,
            `generate(stories, questions)` → the answers, `export(path)` → the
            served SavedModel (`StoryQAModel`).

    Example:

    >>> from keras_attn.models.dnc import DNCQA
    >>> DNCQA(vocab_size=30, memory_size=16, controller_units=32).output.shape
    (None, 30)
    """

    PREPROCESSOR, EXPORT_TASK = DNCQAPreprocessor, "dnc-babi"

    @classmethod
    def resolve_arguments(cls, arguments):
        preprocessor = arguments.get("preprocessor")
        if preprocessor is None:
            if arguments["vocab_size"] is None:
                raise ValueError("DNCQA needs `vocab_size`, or a `preprocessor` to read it "
                                 "from; received neither.")
            return arguments
        if not isinstance(preprocessor, DNCQAPreprocessor):
            raise ValueError("`preprocessor` must be a DNCQAPreprocessor; received "
                             f"{type(preprocessor).__name__}.")
        size = len(preprocessor.vocabulary)
        if arguments["vocab_size"] not in (None, size):
            raise ValueError(f"`vocab_size` must match the preprocessor's ({size}) or be left "
                             f"out; received {arguments['vocab_size']!r}.")
        return {**arguments, "vocab_size": size}

    def __init__(self, vocab_size: int | None = None, memory_size: int = 256,
                 memory_width: int = 64, read_heads: int = 4, controller_units: int = 256,
                 clip_value=20.0, layer_norm=False, bypass_dropout=0.0, temporal_links=True,
                 preprocessor=None, **kwargs):
        if vocab_size < 2:
            raise ValueError(f"`vocab_size` must be at least 2 (padding and a word); "
                             f"received {vocab_size}.")
        words = keras.Input((None,), dtype="int32", name="words")
        answer_step = keras.Input((), dtype="int32", name="answer_step")
        cell = DNCCell(
            units=vocab_size,
            memory_size=memory_size,
            memory_width=memory_width,
            read_heads=read_heads,
            controller_units=controller_units,
            clip_value=clip_value,
            layer_norm=layer_norm,
            bypass_dropout=bypass_dropout,
            temporal_links=temporal_links,
            name="dnc_cell",
        )
        outputs = keras.layers.RNN(cell, return_sequences=True, name="dnc")(
            OneHotWords(vocab_size, name="one_hot")(words)
        )
        logits = OutputAtStep(name="answer")(outputs, answer_step)
        kwargs.setdefault("name", "dnc_qa")
        super().__init__({"words": words, "answer_step": answer_step}, logits, **kwargs)

    def compile(self, optimizer="auto", loss="auto", *, metrics="auto", **kwargs):
        """With no arguments, the paper's (and the command line's): RMSprop 1e-4 with
        momentum 0.9, gradients clipped at norm 10, the answer word's cross-entropy."""
        if optimizer == "auto":
            optimizer = keras.optimizers.RMSprop(1e-4, momentum=0.9, clipnorm=10.0)
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if metrics == "auto":
            metrics = ["accuracy"]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)


def compile_dnc_qa(model, learning_rate=1e-4, clipnorm=10.0, jit_compile=True):
    """`model.compile()` (the answer word's cross-entropy) with RMSprop (momentum 0.9,
    the paper's) at this rate and clipping."""
    return compile_with_built_optimizer(
        model,
        optimizer=keras.optimizers.RMSprop(learning_rate, momentum=0.9, clipnorm=clipnorm),
        jit_compile=jit_compile,
    )
