"""The bAbI question-answering model around `keras_attn.memory.MemN2N`.

Inputs `story (B, N, J)` and `question (B, Jq)` int ids (the memory most recent
first); output: the answer's logits over the vocabulary, restricted to the
candidates of `MemN2NConfig.answer_ids` (every word in the authors' code; the
answers seen in training, as an option). The default config and `MemN2NSchedule` follow
Sukhbaatar et al. 2015 §4.2: 3 hops, d = 20, adjacent tying, position and
temporal encoding, 10 % random noise, linear start; SGD with learning rate 0.01
halved every 25 epochs for 100 epochs, batch 32, gradients clipped to norm 40.
"""

import dataclasses
import numbers

import keras
from keras import ops

from keras_attn.memory import MemN2N
from keras_attn.models.compiling import compile_with_built_optimizer
from keras_attn.models.config import check_integer_fields

_PACKAGE = "keras_attn_models"


POSITION_ENCODING_FORMS = ("code", "paper")


@dataclasses.dataclass
class MemN2NConfig:
    vocab_size: int
    answer_ids: list
    memory_size: int = 50
    sentence_length: int = 12
    question_length: int = 12
    embedding_dim: int = 20
    hops: int = 3
    weight_tying: str = "adjacent"
    position_encoding: bool = True
    # "code": the authors' code's form over the padded width + 1 (their
    # sentences carry one more word, the time word); "paper": each sentence's length.
    position_encoding_form: str = "code"
    temporal_encoding: bool = True
    # "zero": free slots stay in the softmax with score 0 and read 0, as in the
    # authors' code; "masked": they are out of it.
    empty_slots: str = "zero"
    random_noise: float = 0.1
    linear_start: bool = True
    seed: int = 0

    def __post_init__(self):
        check_integer_fields(self, floors={"seed": 0})
        if self.position_encoding_form not in POSITION_ENCODING_FORMS:
            raise ValueError(
                f"`position_encoding_form` must be one of {POSITION_ENCODING_FORMS}; "
                f"received {self.position_encoding_form!r}."
            )
        _check_ids("answer_ids", self.answer_ids, self.vocab_size)


def _check_ids(name, ids, vocab_size):
    """`ValueError` unless `ids` is a non-empty list of integer ids in `[0, vocab_size)`."""
    if not ids or not all(isinstance(i, numbers.Integral) and not isinstance(i, bool)
                          and 0 <= i < vocab_size for i in ids):
        raise ValueError(
            f"`{name}` must be a non-empty list of ids in [0, {vocab_size}); received {ids!r}."
        )


@keras.saving.register_keras_serializable(package=_PACKAGE)
class CandidateLogits(keras.layers.Layer):
    """Keeps the logits of the candidate ids; every other id gets a large negative.

    The softmax then ranges over the candidates only: every word of the vocabulary
    but padding by default (`--answer-space vocabulary`, the authors' code), or only
    the answers seen in training (`--answer-space seen`, where a prediction is always
    one of them). Output in float32 (a stable loss under mixed precision).
    """

    def __init__(self, candidate_ids, vocab_size, **kwargs):
        super().__init__(**kwargs)
        _check_ids("candidate_ids", list(candidate_ids), vocab_size)
        self.candidate_ids = sorted(int(i) for i in candidate_ids)
        self.vocab_size = int(vocab_size)
        allowed = [0.0] * self.vocab_size
        for i in self.candidate_ids:
            allowed[i] = 1.0
        self._allowed = allowed

    def call(self, logits):
        logits = ops.cast(logits, "float32")
        allowed = ops.convert_to_tensor(self._allowed, "float32")
        return ops.where(allowed > 0, logits, ops.full_like(logits, -1e9))

    def compute_output_shape(self, shape):
        return shape

    def get_config(self):
        return {**super().get_config(), "candidate_ids": self.candidate_ids,
                "vocab_size": self.vocab_size}


def build_memn2n(config):
    """A `keras.Model` `{"story", "question"} → answer logits` (and, via
    `with_attention`, the hop attention)."""
    story = keras.Input((config.memory_size, config.sentence_length), dtype="int32", name="story")
    question = keras.Input((config.question_length,), dtype="int32", name="question")
    memory = MemN2N(
        vocab_size=config.vocab_size,
        embedding_dim=config.embedding_dim,
        hops=config.hops,
        memory_size=config.memory_size,
        weight_tying=config.weight_tying,
        position_encoding=config.position_encoding,
        position_encoding_length=(
            max(config.sentence_length, config.question_length) + 1
            if config.position_encoding_form == "code" else None
        ),
        temporal_encoding=config.temporal_encoding,
        empty_slots=config.empty_slots,
        random_noise=config.random_noise,
        linear_start=config.linear_start,
        seed=config.seed,
        name="memn2n",
    )
    logits, _ = memory(story, question)
    answer = CandidateLogits(config.answer_ids, config.vocab_size, name="answer")(logits)
    return keras.Model({"story": story, "question": question}, answer, name="memn2n_qa")


def with_attention(model):
    """The same weights, returning `(answer logits, hop attention (B, K, N))`."""
    memory = model.get_layer("memn2n")
    _, attention = memory.output
    return keras.Model(model.inputs, [model.output, attention])


def compile_memn2n(model, optimizer="sgd", learning_rate=0.01, clipnorm=40.0, clip="each",
                   jit_compile="auto"):
    """SGD (or Adam) on the summed cross-entropy, gradients clipped to `clipnorm`.

    `clip="each"` clips every weight's gradient to the norm on its own, as the
    authors' code does (its `Weight.update`); `"global"` clips them together.
    """
    if clip not in ("each", "global"):
        raise ValueError(f"`clip` must be 'each' or 'global'; received {clip!r}.")
    clipping = {"clipnorm" if clip == "each" else "global_clipnorm": clipnorm}
    if optimizer == "sgd":
        opt = keras.optimizers.SGD(learning_rate, **clipping)
    elif optimizer == "adam":
        opt = keras.optimizers.Adam(learning_rate, **clipping)
    else:
        raise ValueError(f"`optimizer` must be 'sgd' or 'adam'; received {optimizer!r}.")
    return compile_with_built_optimizer(
        model,
        optimizer=opt,
        # Summed over the batch, as in the paper's code: its learning rate and
        # clipping norm are for the summed gradient (a mean would make the
        # steps 32× smaller).
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum"),
        metrics=["accuracy"],
        jit_compile=jit_compile,
    )


class MemN2NSchedule(keras.callbacks.Callback):
    """The learning-rate schedule and linear start.

    While the model is in linear start (its `MemN2N` has `softmax_enabled = 0`)
    the learning rate is `linear_start_rate`. The softmax is restored after
    `linear_start_epochs` epochs (the authors' code: 20 for one task, 30 jointly)
    or, with `linear_start_epochs=None`, once the validation loss (the training
    loss without validation data) has not fallen for `patience` epochs, or after
    `max_linear_epochs` (the paper's text). From then on (or from the start,
    without linear start) the rate is
    `learning_rate · ½^⌊epochs since the softmax / halve_every⌋`.
    """

    def __init__(self, learning_rate=0.005, halve_every=25, linear_start_rate=0.005,
                 linear_start_epochs=20, patience=3, max_linear_epochs=20, verbose=True):
        super().__init__()
        self.learning_rate = learning_rate
        self.halve_every = halve_every
        self.linear_start_rate = linear_start_rate
        self.linear_start_epochs = linear_start_epochs
        self.patience = patience
        self.max_linear_epochs = (linear_start_epochs if linear_start_epochs is not None
                                  else max_linear_epochs)
        self.verbose = verbose
        self.softmax_epoch = None
        self._best, self._waited = float("inf"), 0

    def _memory(self):
        return self.model.get_layer("memn2n")

    def _linear(self):
        return float(self._memory().softmax_enabled.numpy()) < 0.5

    def on_epoch_begin(self, epoch, logs=None):
        if self._linear():
            rate = self.linear_start_rate
        else:
            if self.softmax_epoch is None:  # no linear start, or resumed after it
                self.softmax_epoch = 0 if epoch == 0 else epoch
            rate = self.learning_rate * 0.5 ** ((epoch - self.softmax_epoch) // self.halve_every)
        self.model.optimizer.learning_rate.assign(rate)

    def on_train_end(self, logs=None):
        # A model still in linear start reads its memory with raw scores, not the
        # softmax weights the paper's model (and every read-out of it) has.
        if self._linear():
            self._memory().softmax_enabled.assign(1.0)
            if self.verbose:
                print("training ended in linear start: the softmax is restored for the saved "
                      f"model (train at least {self.max_linear_epochs} epochs for the paper's "
                      "schedule)")

    def on_epoch_end(self, epoch, logs=None):
        if not self._linear():
            return
        logs = logs or {}
        loss = logs.get("val_loss", logs.get("loss"))
        if loss is not None and loss < self._best - 1e-4:
            self._best, self._waited = loss, 0
        else:
            self._waited += 1
        plateau = self.linear_start_epochs is None and self._waited >= self.patience
        if plateau or epoch + 1 >= self.max_linear_epochs:
            self._memory().softmax_enabled.assign(1.0)
            self.softmax_epoch = epoch + 1
            if self.verbose:
                print(f"linear start ends after epoch {epoch + 1}: softmax restored")
