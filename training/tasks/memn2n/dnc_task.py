"""The `dnc-babi` task: the differentiable neural computer on bAbI-format QA.

Graves et al. 2016 (Methods, "bAbI"): each question is one sequence of words,
the story then the question, one-hot inputs; the answer is the output at the
question mark, a softmax over the vocabulary. Data, splits and the held-out
figures are the `memn2n` task's (`--data-dir DIR --tasks N`, or the built-in
stories); the model is `keras_attn.models.dnc.DNCQA`, the paper's size
by default (on a CPU, a smaller memory and controller train far faster:
`--memory-size 64 --memory-width 32 --read-heads 2 --controller-units 128`).
"""

import argparse

import keras
import numpy as np

from keras_attn.models.batching import EndlessBatches
from keras_attn.models.dnc import DNCQA, compile_dnc_qa
from keras_attn.training.arguments import positive_float, positive_int, probability
from keras_attn.training.callbacks import TimeBudget
from keras_attn.training.errors import UsageError
from keras_attn.training.tasks.memn2n import words
from keras_attn.training.tasks.memn2n.task import (
    MemN2NTask,
    Questions,
    add_data_arguments,
    error_figures,
    load_questions,
    print_data,
)

BUCKET = 32  # sequences are padded to a multiple of this many words


def add_arguments(parser):
    add_data_arguments(parser)
    model = parser.add_argument_group("model (defaults: the paper's)")
    model.add_argument("--memory-size", type=positive_int, default=256, help="N, rows")
    model.add_argument("--memory-width", type=positive_int, default=64, help="W")
    model.add_argument("--read-heads", type=positive_int, default=4, help="R")
    model.add_argument("--controller-units", type=positive_int, default=256, help="the LSTM's")
    model.add_argument("--max-story-words", type=positive_int, default=400,
                       help="a longer story keeps its most recent words")
    robust = parser.add_argument_group(
        "the robust DNC (Franke et al. 2018; off by default until measured better here)")
    robust.add_argument("--layer-norm", action="store_true",
                        help="layer-normalise the memory unit's input (the interface vector)")
    robust.add_argument("--bypass-dropout", type=probability, default=0.0,
                        help="dropout on the controller output that bypasses the memory")
    robust.add_argument("--temporal-links", action=argparse.BooleanOptionalAction, default=True,
                        help="the temporal link matrix (--no-temporal-links: content-based "
                        "reads only, no N×N matrix)")
    fit = parser.add_argument_group("training")
    fit.add_argument("--epochs", type=positive_int, default=30)
    fit.add_argument("--steps-per-epoch", type=positive_int,
                     help="batches per epoch (default: every training question once); "
                     "shorter epochs check the validation split more often, e.g. on bAbI 10k")
    fit.add_argument("--max-minutes", type=positive_float,
                     help="stop after this many minutes of training (at a batch's end)")
    fit.add_argument("--learning-rate", type=positive_float, default=1e-4,
                     help="RMSprop, momentum 0.9 (the paper's)")
    fit.add_argument("--clipnorm", type=positive_float, default=10.0)


def prepare(args):
    return prepared(*load_questions(args))


def prepared(splits, names, source):
    """The run's data from its question splits: the splits and the vocabulary."""
    return Questions(splits=splits, names=names, source=source,
                     vocab=words.build_vocabulary(splits["train"]))


def read_answers(model, vocab, settings, questions, batch_size=256):
    """(answer tokens, their probabilities) of `questions`, batched by length."""
    sequences, _ = words.encode(questions, vocab, int(settings["max_story_words"]))
    probabilities = np.zeros((len(questions), len(vocab)), "float32")
    for rows in words.batches_by_length([len(s) for s in sequences], batch_size):
        logits = model.predict_on_batch(words.pad([sequences[i] for i in rows], BUCKET))
        probabilities[rows] = keras.ops.convert_to_numpy(
            keras.ops.softmax(keras.ops.convert_to_tensor(logits), axis=-1))
    best = probabilities.argmax(-1)
    return [vocab.tokens[i] for i in best], probabilities.max(-1)


class DNCBabiTask(MemN2NTask):
    """`MemN2NTask`'s data, assets and figures with `models.dnc.DNCQA`."""

    name = "dnc-babi"
    summary = "differentiable neural computer, bAbI-format QA, word by word (Graves et al. 2016)"
    restarts, restarts_default = 1, ""  # a DNC run is hours: one unless asked

    def add_arguments(self, parser):
        add_arguments(parser)

    def jit_default(self, backend):
        # TensorFlow's XLA refuses the gradient of the DNC's loop over a batch's
        # own number of steps (a shape it cannot fix at compile time).
        return backend == "jax"

    def prepare(self, args):
        data = prepare(args)
        print_data(data)
        return data

    def build_model(self, args, data, jit_compile):
        model = DNCQA(
            vocab_size=len(data.vocab), memory_size=args.memory_size,
            memory_width=args.memory_width, read_heads=args.read_heads,
            controller_units=args.controller_units, layer_norm=args.layer_norm,
            bypass_dropout=args.bypass_dropout, temporal_links=args.temporal_links,
        )
        return compile_dnc_qa(model, learning_rate=args.learning_rate,
                              clipnorm=args.clipnorm, jit_compile=jit_compile)

    def callbacks(self, model, data, args):
        return [TimeBudget(args.max_minutes * 60)] if args.max_minutes else []

    def settings(self, args, data, model):
        return {"source": data.source,
                "names": {str(k): v for k, v in data.names.items()},
                "max_story_words": args.max_story_words}

    def fit(self, model, data, args, callbacks, verbose):
        vocab, limit = data.vocab, args.max_story_words
        train = words.QuestionBatches(*words.encode(data.splits["train"], vocab, limit),
                                      args.batch_size, BUCKET, shuffle=True, seed=args.seed)
        if args.steps_per_epoch:
            train = EndlessBatches(train)
        validation = words.QuestionBatches(
            *words.encode(data.splits["validation"], vocab, limit), args.batch_size, BUCKET)
        history = model.fit(train, validation_data=validation, epochs=args.epochs,
                            steps_per_epoch=args.steps_per_epoch, callbacks=callbacks,
                            verbose=verbose)
        return {"epochs": len(history.epoch), "train_loss": float(history.history["loss"][-1]),
                "records": {"history": history.history}}

    def figures(self, model, vocab, settings, questions):
        if not questions:
            return {}
        return error_figures(read_answers(model, vocab, settings, questions)[0], questions)

    def answer(self, model, vocab, settings, questions):
        return read_answers(model, vocab, settings, questions)

    def export_archive(self, model, meta, assets):
        from keras_attn.training.tasks.memn2n.export import dnc_archive

        return dnc_archive(model, assets["vocab"], meta.settings, assets["forms"])

    def predict(self, version_dir, meta, args):
        from keras_attn.training.tasks.memn2n.predict import answer_with_dnc

        return answer_with_dnc(version_dir, meta, args)

    def plot(self, prediction, path):
        raise UsageError("predict: a dnc-babi export has no attention figure (it answers and "
                         "gives the answer's probability)")
