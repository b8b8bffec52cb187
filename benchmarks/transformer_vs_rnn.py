"""Transformer vs RNN translator: held-out quality per second of training.

    python benchmarks/transformer_vs_rnn.py          # prints a table, writes JSON

Both models train on the translator task's built-in data (`keras-attn train
translator`'s defaults: 20,000 dates, batch 64), with the task's default sizes,
learning rates (the Transformer's warm-up and decay) and `jit_compile` for
`--model rnn` (Bahdanau GRU) and `--model transformer`, once per `--seeds`
entry (which sets the data split, the initial weights and the batch order).
Every `--eval-every` batches the training clock stops and
greedy decoding is scored on `--eval-size` held-out dates (exact match). The clock
counts everything `model.fit` spends on training, first-step compilation
included, and nothing of the evaluations.

Printed: exact match at each evaluation against training seconds, the seconds
each model needed to reach `--target` (the translator's 99.5 % bar), the
training throughput in target tokens per second, and with several seeds the
median over seeds of the seconds to the target. Any backend; the figures in
the README are from the TensorFlow backend on CPU.
"""

import argparse
import math
import os
import shlex
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import keras_attn.training  # noqa: E402, F401, I001  (its TensorFlow settings, before Keras starts TensorFlow)

import keras  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_io import default_path, write_results  # noqa: E402

from keras_attn.models.translator import compile_translator, initialize_output_bias  # noqa: E402
from keras_attn.training import cli  # noqa: E402
from keras_attn.training.tasks.translator import data as tdata  # noqa: E402
from keras_attn.training.tasks.translator import decoding, flags, modeling


class QualityClock(keras.callbacks.Callback):
    """Training seconds (evaluations excluded) and held-out exact match every `every` batches."""

    def __init__(self, every, evaluate):
        super().__init__()
        self.every, self.evaluate = every, evaluate
        self.seconds, self.batches, self.curve = 0.0, 0, []

    def on_train_begin(self, logs=None):
        self.resumed = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        if self.batches % self.every:
            return
        self.seconds += time.perf_counter() - self.resumed
        exact = self.evaluate(self.model)
        self.curve.append({"batches": self.batches, "train_seconds": self.seconds,
                           "exact_match": exact})
        print(f"  {self.batches:>5} batches {self.seconds:7.1f} s  exact match {100 * exact:6.2f} %",
              flush=True)
        self.resumed = time.perf_counter()

    def on_train_end(self, logs=None):
        self.seconds += time.perf_counter() - self.resumed


def seconds_to_reach(curve, target):
    """Training seconds at the first evaluation at or above `target`, else `None`."""
    return next((p["train_seconds"] for p in curve if p["exact_match"] >= target), None)


def median_seconds_to_target(runs):
    """Per model, the median over its runs of the seconds to the target; a run
    that never got there counts as slower than any other (`None` if the median is one)."""
    medians = {}
    for model in dict.fromkeys(run["model"] for run in runs):
        reached = sorted(run["seconds_to_target"] if run["seconds_to_target"] is not None
                         else math.inf for run in runs if run["model"] == model)
        middle = len(reached) // 2
        value = reached[middle] if len(reached) % 2 else (reached[middle - 1] + reached[middle]) / 2
        medians[model] = None if math.isinf(value) else value
    return medians


def run_model(model_name, data, args, seed):
    extra = shlex.split(args.transformer_flags) if model_name == "transformer" else []
    task_args = cli.task_options(["train", "translator", "--model", model_name, "--epochs",
                                  str(args.epochs), "--batch-size", str(args.batch_size),
                                  *extra])
    keras.utils.set_random_seed(seed)
    model = modeling.build_model(task_args, data)
    initialize_output_bias(model, tdata.target_token_counts(data))
    batches, _ = tdata.datasets(data, args.batch_size, seed, task_args.sort_window)
    compile_translator(model, learning_rate=modeling.learning_rate(task_args, len(batches)),
                       jit_compile=True if task_args.jit else "auto")
    held_out = data.splits["test"][: args.eval_size]
    sources, references = [s for s, _ in held_out], [t for _, t in held_out]
    meta = modeling.run_settings(task_args, data)

    def evaluate(model):
        hypotheses = decoding.translate_texts(
            model, data.source_vocab, data.target_vocab, meta, sources
        )
        return float(np.mean([h == r for h, r in zip(hypotheses, references, strict=True)]))

    clock = QualityClock(args.eval_every, evaluate)
    parameters = sum(int(np.prod(v.shape)) for v in model.trainable_weights)
    print(f"{model_name}, seed {seed}: {parameters:,} parameters")
    model.fit(batches, epochs=args.epochs, callbacks=[clock], verbose=0)
    tokens = float(sum(len(t) + 1 for t in data.train_ids[1])) * args.epochs
    return {
        "model": model_name,
        "seed": seed,
        "parameters": parameters,
        "learning_rate": task_args.learning_rate or flags.DEFAULT_LEARNING_RATE,
        "flags": extra,
        "schedule": task_args.schedule if model_name == "transformer" else "constant",
        "jit_compile": bool(model.jit_compile),
        "train_seconds": clock.seconds,
        "tokens_per_second": tokens / clock.seconds,
        "seconds_to_target": seconds_to_reach(clock.curve, args.target),
        "final_exact_match": clock.curve[-1]["exact_match"] if clock.curve else None,
        "curve": clock.curve,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--train-size", type=int, default=20000)
    parser.add_argument("--eval-size", type=int, default=1000, help="held-out dates scored")
    parser.add_argument("--eval-every", type=int, default=50, help="batches between scores")
    parser.add_argument("--target", type=float, default=0.995, help="exact match to reach")
    parser.add_argument("--models", default="rnn,transformer")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds, one run of each model per seed")
    parser.add_argument(
        "--transformer-flags",
        default="",
        help="`keras-attn train translator` flags for the Transformer, e.g. "
        "\"--rope-max-wavelength 0\" (an ablation)",
    )
    parser.add_argument("--output", default=default_path("transformer_vs_rnn"))
    args = parser.parse_args(argv)
    for name in ("epochs", "batch_size", "train_size", "eval_size", "eval_every"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1; received {getattr(args, name)}")
    models = args.models.split(",")
    unknown = sorted(set(models) - set(flags.MODEL_NAMES))
    if unknown:
        parser.error(f"--models: unknown {unknown}; expected names from {sorted(flags.MODEL_NAMES)}")
    try:
        seeds = [int(x) for x in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds must be comma-separated integers; received {args.seeds!r}")
    runs = []
    for seed in seeds:
        data_args = cli.task_options(
            ["train", "translator", "--train-size", str(args.train_size),
             "--test-size", str(args.eval_size), "--seed", str(seed)]
        )
        data = tdata.load_data(data_args)
        runs += [run_model(name, data, args, seed) for name in models]

    print(f"\nexact match on {args.eval_size} held-out dates, by training seconds "
          f"(backend {keras.backend.backend()}, {os.cpu_count()} CPUs)")
    print(f"{'model':<13}{'seed':>5}{'params':>9}{'jit':>7}{'tokens/s':>10}"
          f"{'s to ' + format(args.target, '.1%'):>12}{'final':>9}")
    for run in runs:
        reach = run["seconds_to_target"]
        print(f"{run['model']:<13}{run['seed']:>5}{run['parameters']:>9,}{str(run['jit_compile']):>7}"
              f"{run['tokens_per_second']:>10.0f}{'never' if reach is None else f'{reach:.1f}':>12}"
              f"{100 * run['final_exact_match']:>8.2f}%")
    medians = median_seconds_to_target(runs)
    if len(seeds) > 1:
        print(f"median over {len(seeds)} seeds of the seconds to {args.target:.1%}: "
              + ", ".join(f"{m} {'never' if v is None else f'{v:.1f}'}" for m, v in medians.items()))
    result = {
        "benchmark": "transformer_vs_rnn",
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "cpus": os.cpu_count(),
        "config": vars(args),
        "runs": runs,
        "median_seconds_to_target": medians,
    }
    return write_results(result, args.output)


if __name__ == "__main__":
    main()
