"""The bAbI question-answering model around `keras_attn.memory.MemN2N`.

Inputs `story (B, N, J)` and `question (B, Jq)` int ids (the memory most recent
first); output: the answer's logits over the vocabulary, restricted to the
candidates of `MemN2NQA`'s `answer_ids` (every word in the authors' code; the
answers seen in training, as an option). The model's defaults and `MemN2NSchedule` follow
Sukhbaatar et al. 2015 §4.2: 3 hops, d = 20, adjacent tying, position and
temporal encoding, 10 % random noise, linear start; SGD with learning rate 0.01
halved every 25 epochs for 100 epochs, batch 32, gradients clipped to norm 40.
"""

import numbers

import keras
from keras import ops

from keras_attn.choices import MEMN2N_POSITION_ENCODING_FORMS
from keras_attn.memory import MemN2N
from keras_attn.models.compiling import compile_with_built_optimizer
from keras_attn.models.memn2n.preprocessor import MemN2NPreprocessor
from keras_attn.models.memn2n.story_qa import StoryQAModel

_PACKAGE = "keras_attn_models"

# The input sizes without a preprocessor, when not given.
INPUT_SIZES = {"memory_size": 50, "sentence_length": 12, "question_length": 12}




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


@keras.saving.register_keras_serializable(package=_PACKAGE)
class MemN2NQA(StoryQAModel):
    """The question-answering model: `{"story", "question"} → answer logits`.

    `story (B, memory_size, sentence_length)` and `question (B, question_length)`
    are word ids (0 is padding); the logits range over the vocabulary, every id
    outside `answer_ids` held at −10⁹ (`CandidateLogits`). `with_attention`
    returns the same weights with the hops' attention too.

    Args:
        vocab_size: words, padding included.
        answer_ids: the ids an answer may be (the task: every word but padding).
        memory_size, sentence_length, question_length: the input shapes.
        embedding_dim, hops, weight_tying, position_encoding, temporal_encoding,
            empty_slots, random_noise, linear_start, seed: as `MemN2N`'s.
        position_encoding_form: `"code"`, the authors' code's form over the
            padded width + 1 (their sentences carry one more word, the time
            word), or `"paper"`, over each sentence's own length.

        preprocessor: a `MemN2NPreprocessor`: the vocabulary, the input sizes and
            the answer ids come from it (`answer_space`: every word, or the answers
            seen in training), and the model takes text: `fit(x={"story": stories,
            "question": questions}, y=answers)`, `generate(stories, questions)` →
            the answers, `export(path)` → the served SavedModel.
        answer_space: with a preprocessor, `"vocabulary"` or `"seen"`.

    Example:

    >>> from keras_attn.models.memn2n import MemN2NQA
    >>> model = MemN2NQA(vocab_size=20, answer_ids=[3, 4], memory_size=5,
    ...                  sentence_length=4, question_length=3)
    >>> model.hops, model.output.shape
    (3, (None, 20))
    """

    INTEGER_FLOORS = {"seed": 0}
    PREPROCESSOR, EXPORT_TASK = MemN2NPreprocessor, "memn2n"

    @classmethod
    def resolve_arguments(cls, arguments):
        preprocessor = arguments.get("preprocessor")
        if preprocessor is None:
            missing = [n for n in ("vocab_size", "answer_ids") if arguments[n] is None]
            if missing:
                raise ValueError("MemN2NQA needs `vocab_size` and `answer_ids`, or a "
                                 "`preprocessor` to read them from; received none for "
                                 f"{', '.join(f'`{m}`' for m in missing)}.")
            return {**arguments, **{name: value for name, value in INPUT_SIZES.items()
                                    if arguments[name] is None}}
        if not isinstance(preprocessor, MemN2NPreprocessor):
            raise ValueError("`preprocessor` must be a MemN2NPreprocessor; received "
                             f"{type(preprocessor).__name__}.")
        derived = {"vocab_size": len(preprocessor.vocabulary),
                   "answer_ids": tuple(preprocessor.answer_ids(arguments["answer_space"])),
                   "memory_size": preprocessor.memory_size,
                   "sentence_length": preprocessor.sentence_length,
                   "question_length": preprocessor.question_length}
        for name, value in derived.items():
            given = arguments[name]
            if given is not None and (tuple(given) if name == "answer_ids" else given) != value:
                raise ValueError(f"`{name}` must match the preprocessor's ({value}) or be left "
                                 f"out; received {given!r}.")
        return {**arguments, **derived}

    def __init__(self, vocab_size: int | None = None, answer_ids=None,
                 memory_size: int | None = None, sentence_length: int | None = None,
                 question_length: int | None = None,
                 embedding_dim: int = 20, hops: int = 3, weight_tying="adjacent",
                 position_encoding=True, position_encoding_form="code",
                 temporal_encoding=True, empty_slots="zero", random_noise=0.1,
                 linear_start=True, seed: int = 0, preprocessor=None,
                 answer_space="vocabulary", **kwargs):
        if position_encoding_form not in MEMN2N_POSITION_ENCODING_FORMS:
            raise ValueError(
                f"`position_encoding_form` must be one of {MEMN2N_POSITION_ENCODING_FORMS}; "
                f"received {position_encoding_form!r}."
            )
        _check_ids("answer_ids", list(answer_ids), vocab_size)
        story = keras.Input((memory_size, sentence_length), dtype="int32", name="story")
        question = keras.Input((question_length,), dtype="int32", name="question")
        memory = MemN2N(
            vocab_size=vocab_size,
            embedding_dim=embedding_dim,
            hops=hops,
            memory_size=memory_size,
            weight_tying=weight_tying,
            position_encoding=position_encoding,
            position_encoding_length=(
                max(sentence_length, question_length) + 1
                if position_encoding_form == "code" else None
            ),
            temporal_encoding=temporal_encoding,
            empty_slots=empty_slots,
            random_noise=random_noise,
            linear_start=linear_start,
            seed=seed,
            name="memn2n",
        )
        logits, _ = memory(story, question)
        answer = CandidateLogits(answer_ids, vocab_size, name="answer")(logits)
        kwargs.setdefault("name", "memn2n_qa")
        super().__init__({"story": story, "question": question}, answer, **kwargs)

    def compile(self, optimizer="auto", loss="auto", *, metrics="auto", **kwargs):
        """With no arguments, the paper's: SGD at 0.01 on the summed cross-entropy,
        each weight's gradient clipped to norm 40 (`compile_memn2n`); add
        `MemN2NSchedule()` to `fit`'s callbacks for linear start and the halvings."""
        if optimizer == "auto":
            optimizer = keras.optimizers.SGD(0.01, clipnorm=40.0)
        if loss == "auto":
            # Summed over the batch, as in the paper's code: its learning rate and
            # clipping norm are for the summed gradient (a mean would make the steps
            # 32× smaller).
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                              reduction="sum")
        if metrics == "auto":
            metrics = ["accuracy"]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def serving_reader(self):
        return with_attention(self)


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
    return compile_with_built_optimizer(model, optimizer=opt, jit_compile=jit_compile)


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
