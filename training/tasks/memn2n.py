"""The `memn2n` task: bAbI-format question answering with `models.memn2n`.

Default data: built-in stories (`training.data.stories`) of four kinds, trained
jointly. `--data-dir DIR` trains on the real bAbI files there (`--tasks 1` for
one task, a comma list, or `all`, the default); a validation split is held out
from the `_train.txt` files, and the `_test.txt` files beside them, when present,
give the final figure.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from training.arguments import fraction, non_negative_int, positive_float, positive_int, probability
from training.data import babi
from training.runtime import JIT_HELP, resolve_jit
from training.text import Vocabulary

DEFAULT_WORK_DIR = os.path.join("runs", "memn2n")
DEFAULT_EXPORT_ROOT = "saved_models"
EXPORT_NAME = "memn2n"


def add_arguments(parser):
    data = parser.add_argument_group("data")
    data.add_argument("--data-dir", help="a folder of bAbI qaN_<name>_{train,test}.txt files")
    data.add_argument("--tasks", default="all", help="bAbI task numbers (e.g. 1 or 1,2,3) or all")
    data.add_argument(
        "--kinds",
        default="all",
        help="built-in story kinds (numbers or names, comma-separated) or all: "
        "single-supporting-fact, two-supporting-facts, yes-no, counting",
    )
    data.add_argument("--train-questions", type=positive_int,
                      default=3000, help="built-in, per kind")
    data.add_argument("--test-questions", type=positive_int,
                      default=1000, help="built-in, per kind")
    data.add_argument("--validation-fraction", type=fraction, default=0.1)
    data.add_argument("--seed", type=non_negative_int, default=0)
    model = parser.add_argument_group("model")
    model.add_argument("--memory-size", type=positive_int,
                       default=50, help="most recent sentences kept")
    model.add_argument(
        "--embedding-dim", type=positive_int,
        help="default 20 for one task, 50 for several (the paper)",
    )
    model.add_argument("--hops", type=positive_int, default=3)
    model.add_argument("--weight-tying", choices=("adjacent", "layerwise"), default="adjacent")
    model.add_argument("--position-encoding", action=argparse.BooleanOptionalAction, default=True)
    model.add_argument("--temporal-encoding", action=argparse.BooleanOptionalAction, default=True)
    model.add_argument("--random-noise", type=probability, default=0.1)
    model.add_argument("--linear-start", action=argparse.BooleanOptionalAction, default=True)
    fit = parser.add_argument_group("training")
    fit.add_argument("--epochs", type=positive_int, help="default 100 for one task, 60 for several")
    fit.add_argument("--batch-size", type=positive_int, default=32)
    fit.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd")
    fit.add_argument("--learning-rate", type=positive_float,
                     help="default 0.01 (sgd), 0.001 (adam)")
    fit.add_argument(
        "--halve-every", type=positive_int, help="epochs; default 25 for one task, 15 for several"
    )
    fit.add_argument("--clipnorm", type=positive_float, default=40.0)
    fit.add_argument(
        "--jit", action=argparse.BooleanOptionalAction, default=None,
        help=JIT_HELP + "; ~3× faster on TF/CPU, benchmarks/memn2n.py",
    )
    fit.add_argument("--mixed-precision", action="store_true", help="mixed_float16 policy")
    fit.add_argument("--tensorboard", action=argparse.BooleanOptionalAction, default=None)
    out = parser.add_argument_group("output")
    out.add_argument("--output-dir", default=DEFAULT_EXPORT_ROOT,
                     help="export root: writes OUTPUT_DIR/memn2n/<next version>/")
    out.add_argument("--work-dir", default=DEFAULT_WORK_DIR)
    out.add_argument("--no-export", action="store_true")
    out.add_argument("--quiet", action="store_true", help="no per-epoch lines")


# -- data -------------------------------------------------------------------------
def _numbers(text, name):
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise SystemExit(f"`{name}` must be numbers separated by commas or `all`; "
                         f"received {text!r}") from None


def _load_babi(path, task=None):
    """`babi.load_babi_file`; a malformed or non-UTF-8 file stops the command with its
    `file:line:` message instead of a traceback."""
    try:
        return babi.load_babi_file(path, task)
    except ValueError as error:
        raise SystemExit(str(error)) from None


def load_questions(args):
    """`{"train", "validation", "test"}` question lists, plus task names."""
    if args.data_dir and args.kinds != "all":
        raise SystemExit("`--kinds` picks the built-in stories; with `--data-dir`, pick bAbI "
                         f"tasks with `--tasks`; received --kinds {args.kinds!r}")
    if not args.data_dir and args.tasks != "all":
        raise SystemExit("`--tasks` picks bAbI files from `--data-dir`; the built-in stories "
                         "are picked with `--kinds` (1, 2, 6, 7 or their names); received "
                         f"--tasks {args.tasks!r}")
    if args.data_dir:
        try:
            files = babi.find_task_files(args.data_dir)
        except ValueError as error:
            raise SystemExit(str(error)) from None
        wanted = sorted(files) if args.tasks == "all" else _numbers(args.tasks, "--tasks")
        missing = [t for t in wanted if t not in files]
        if missing:
            raise SystemExit(f"{args.data_dir}: no qa{missing[0]}_*_train.txt (found tasks "
                             f"{sorted(files)})")
        splits = {"train": [], "validation": [], "test": []}
        for task in wanted:
            train = _load_babi(files[task]["train"], task)
            train, validation = babi.split_by_story(train, args.validation_fraction, args.seed)
            splits["train"] += train
            splits["validation"] += validation
            if files[task]["test"]:
                splits["test"] += _load_babi(files[task]["test"], task)
        names = {t: files[t]["name"] for t in wanted}
        return splits, names, "babi"
    from training.data.stories import KINDS, generate_questions, kind_number

    try:
        kinds = sorted(KINDS) if args.kinds == "all" else sorted(
            {kind_number(k.strip()) for k in args.kinds.split(",")}
        )
    except ValueError as error:
        raise SystemExit(f"`--kinds`: {error}") from None
    validation = max(1, round(args.validation_fraction * args.train_questions))
    splits = {"train": [], "validation": [], "test": []}
    for kind in kinds:
        splits["train"] += generate_questions(kind, args.train_questions, seed=args.seed)
        splits["validation"] += generate_questions(kind, validation, seed=args.seed + 1)
        splits["test"] += generate_questions(kind, args.test_questions, seed=args.seed + 2)
    return splits, {k: KINDS[k] for k in kinds}, "built-in"


def prepare(args):
    splits, names, source = load_questions(args)
    vocab = babi.build_vocabulary(splits["train"])
    sentence_length, question_length = babi.lengths_of(splits["train"])
    answers = sorted({vocab.index[babi.normalize_answer(q.answer)] for q in splits["train"]})
    several = len(names) > 1
    return {
        "splits": splits,
        "names": names,
        "source": source,
        "vocab": vocab,
        "sentence_length": sentence_length,
        "question_length": question_length,
        "answer_ids": answers,
        "several": several,
    }


def arrays(vocab, meta, questions):
    """`babi.vectorize` with the run's memory and lengths."""
    return babi.vectorize(
        questions, vocab, meta["memory_size"], meta["sentence_length"], meta["question_length"]
    )


def task_names(meta):
    return {int(k): v for k, v in meta.get("names", {}).items()}


# -- run directory -------------------------------------------------------------------
def save_run(work_dir, model, vocab, meta, test_questions):
    model.save(os.path.join(work_dir, "model.keras"))
    vocab.save(os.path.join(work_dir, "vocab.json"))
    with open(os.path.join(work_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    # The held-out questions, one bAbI-format file per task, for `evaluate`.
    test_dir = os.path.join(work_dir, "test")
    os.makedirs(test_dir, exist_ok=True)
    for task, name in task_names(meta).items():
        babi.write_babi([q for q in test_questions if q.task == task],
                        os.path.join(test_dir, f"qa{task}_{name}_test.txt"))


def load_run(run_dir):
    import keras

    import models.memn2n  # noqa: F401  (registers the layers)

    with open(os.path.join(run_dir, "meta.json")) as f:
        meta = json.load(f)
    model = keras.saving.load_model(os.path.join(run_dir, "model.keras"), safe_mode=True)
    return model, Vocabulary.load(os.path.join(run_dir, "vocab.json")), meta


# -- answers and figures --------------------------------------------------------------
def answer(model, vocab, meta, questions, batch_size=512):
    """(answers, probabilities, hop attention (n, K, N)) from the Keras model."""
    return _read(model, vocab, arrays(vocab, meta, questions)[0], batch_size)


def _read(model, vocab, x, batch_size=512):
    from keras import ops

    from models.memn2n import with_attention

    reader = with_attention(model)
    logits, attention = reader.predict(x, batch_size=batch_size, verbose=0)
    probs = ops.convert_to_numpy(ops.softmax(ops.convert_to_tensor(logits), axis=-1))
    best = probs.argmax(-1)
    return [vocab.tokens[i] for i in best], probs.max(-1), np.asarray(attention)


def figures(model, vocab, meta, questions):
    """Per-task accuracy and error, and how often attention finds the support."""
    if not questions:
        return {}
    x, _, slots = arrays(vocab, meta, questions)
    answers, _, attention = _read(model, vocab, x)
    correct = np.array([a == babi.normalize_answer(q.answer)
                        for a, q in zip(answers, questions, strict=True)])
    tasks = np.array([q.task for q in questions])
    out = {"tasks": {}}
    for task in sorted(set(tasks.tolist())):
        rows = tasks == task
        entry = {"n": int(rows.sum()), "accuracy": float(correct[rows].mean())}
        entry["error"] = 1.0 - entry["accuracy"]
        has_support = rows & (slots[:, 0] >= 0)
        if has_support.any():
            # "Most weight": the slot with the largest weight summed over the hops.
            top = attention[has_support].sum(axis=1).argmax(-1)
            hits = (slots[has_support] == top[:, None]).any(-1)
            entry["support_attention"] = float(hits.mean())
            entry["support_attention_per_hop"] = [
                float((slots[has_support] == attention[has_support][:, k].argmax(-1)[:, None])
                      .any(-1).mean())
                for k in range(attention.shape[1])
            ]
        out["tasks"][str(task)] = entry
    errors = [e["error"] for e in out["tasks"].values()]
    out["mean_error"] = float(np.mean(errors))
    out["failed"] = int(sum(e > 0.05 for e in errors))
    out["n"] = len(questions)
    return out


def print_figures(title, figures_, names):
    print(title)
    for task, entry in figures_["tasks"].items():
        name = names.get(int(task), "")
        line = f"  {task:>2} {name:<26} error {100 * entry['error']:5.1f} %  (n={entry['n']})"
        if "support_attention" in entry:
            line += f"  attention on a supporting fact {100 * entry['support_attention']:.0f} %"
        print(line)
    print(f"  mean error {100 * figures_['mean_error']:.1f} %, failed (> 5 %): "
          f"{figures_['failed']} of {len(figures_['tasks'])}")


# -- the task's entry points ------------------------------------------------------------
def fit_model(args, data, callbacks=()):
    """Builds, compiles and fits a model on `data` (from `prepare`) as `args` say.

    Returns `(model, meta, schedule, history, seconds)`.
    """
    import dataclasses

    from models.memn2n import MemN2NConfig, MemN2NSchedule, build_memn2n, compile_memn2n

    splits, several = data["splits"], data["several"]
    config = MemN2NConfig(
        vocab_size=len(data["vocab"]),
        answer_ids=data["answer_ids"],
        memory_size=args.memory_size,
        sentence_length=data["sentence_length"],
        question_length=data["question_length"],
        embedding_dim=args.embedding_dim or (50 if several else 20),
        hops=args.hops,
        weight_tying=args.weight_tying,
        position_encoding=args.position_encoding,
        temporal_encoding=args.temporal_encoding,
        random_noise=args.random_noise,
        linear_start=args.linear_start,
        seed=args.seed,
    )
    learning_rate = args.learning_rate or (0.01 if args.optimizer == "sgd" else 0.001)
    epochs = args.epochs or (60 if several else 100)
    schedule = MemN2NSchedule(
        learning_rate=learning_rate,
        halve_every=args.halve_every or (15 if several else 25),
        linear_start_rate=learning_rate / 2,
        verbose=not args.quiet,
    )
    model = compile_memn2n(
        build_memn2n(config), optimizer=args.optimizer, learning_rate=learning_rate,
        clipnorm=args.clipnorm, jit_compile=resolve_jit(args.jit),
    )
    meta = {"task": "memn2n", "source": data["source"],
            "names": {str(k): v for k, v in data["names"].items()}, **dataclasses.asdict(config)}
    x, y, _ = arrays(data["vocab"], meta, splits["train"])
    vx, vy, _ = arrays(data["vocab"], meta, splits["validation"])
    start = time.time()
    history = model.fit(
        x, y, validation_data=(vx, vy), batch_size=args.batch_size, epochs=epochs,
        callbacks=[schedule, *callbacks],
        verbose=0 if args.quiet else (2 if os.environ.get("CI") or not sys.stdout.isatty() else 1),
    )
    return model, meta, schedule, history, time.time() - start


def train(args):
    import keras

    from training.runtime import set_seed

    if args.mixed_precision:
        keras.config.set_dtype_policy("mixed_float16")
    set_seed(args.seed)
    data = prepare(args)
    splits = data["splits"]
    print(f"data: {data['source']} {list(data['names'])}, {len(splits['train'])} train / "
          f"{len(splits['validation'])} validation / {len(splits['test'])} test questions; "
          f"vocabulary {len(data['vocab'])}; sentences ≤ {data['sentence_length']} words")
    os.makedirs(args.work_dir, exist_ok=True)
    from training.runtime import run_callbacks

    model, meta, schedule, history, train_seconds = fit_model(
        args, data, callbacks=run_callbacks(args.work_dir, args.tensorboard)
    )
    epochs = history.params["epochs"]
    test = splits["test"] or splits["validation"]
    save_run(args.work_dir, model, data["vocab"], meta, test)
    results = {
        "validation": figures(model, data["vocab"], meta, splits["validation"]),
        "test": figures(model, data["vocab"], meta, splits["test"]) if splits["test"] else None,
        "train_seconds": train_seconds,
        "epochs": epochs,
        "linear_start_epochs": (schedule.softmax_epoch or epochs) if args.linear_start else 0,
        "train_loss": float(history.history["loss"][-1]),
    }
    print(f"trained {epochs} epochs in {train_seconds:.0f} s "
          f"(linear start: {results['linear_start_epochs']} epochs)")
    print_figures("validation:", results["validation"], task_names(meta))
    if results["test"]:
        print_figures("test:", results["test"], task_names(meta))
    export_path = None
    if not args.no_export:
        from training.runtime import export_and_report

        export_path = export_and_report("memn2n", args.work_dir, args.output_dir)
    sample = test[:3]
    answers, probs, _ = answer(model, data["vocab"], meta, sample)
    print("sample answers (held-out):")
    for q, a, p in zip(sample, answers, probs, strict=True):
        mark = "✓" if a == babi.normalize_answer(q.answer) else "✗"
        print(f"  {' '.join(q.story[-3:])} … {q.question} → {a} ({p:.2f}) {mark}")
    results["export"] = export_path
    return results


def export(run_dir, export_root):
    from training import export as export_lib

    model, vocab, meta = load_run(run_dir)
    return export_lib.export_memn2n(model, vocab, meta, export_root, EXPORT_NAME, run_dir)


def evaluate(args):
    """Figures for a run directory (or an export's assets.extra/) on bAbI-format questions."""
    model, vocab, meta = load_run(args.run_dir)
    path = args.data or os.path.join(args.run_dir, "test")
    if os.path.isdir(path):
        files = babi.find_task_files(path, split="test")
        questions = [q for task, entry in files.items()
                     for q in _load_babi(entry["test"], task)]
    else:
        questions = _load_babi(path)
    results = figures(model, vocab, meta, questions)
    print_figures(f"{args.run_dir} on {path}:", results, task_names(meta))
    return results
