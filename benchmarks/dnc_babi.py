"""The DNC on bAbI (Graves et al. 2016): learning curve and per-task error in a time budget.

    python benchmarks/dnc_babi.py --data-dir DIR --minutes 30 [--batch-size 32] [task flags]

`DIR` holds bAbI `qaN_<name>_train.txt` files (`en-10k` for the paper's setting;
`_test.txt` beside them give the final figure). Every task found trains
jointly, with the splits of `benchmarks/memn2n.py` (10 % of each file's stories
for validation; without test files, a further 10 % as a stand-in test split).
Training runs `keras-attn train dnc-babi`'s model and loop for `--minutes`; every
`--check-every` batches the curve gets the training loss and the error on
`--curve-questions` validation questions per task. At the end: per-task error
on the test split, its mean and the failed tasks (> 5 %).

Any `keras-attn train dnc-babi` flag passes through (`--memory-size`,
`--controller-units`, `--learning-rate`, ...); the defaults are the paper's
model. On a GPU: `KERAS_BACKEND=jax python benchmarks/dnc_babi.py --data-dir DIR
--minutes 600 --batch-size 64`.
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("KERAS_BACKEND", "jax")

# The paper's DNC on jointly trained bAbI 10k (Graves et al. 2016, Table 1).
PAPER_MEAN_ERROR, PAPER_FAILED = 3.8, 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--tasks", default="all")
    parser.add_argument("--minutes", type=float, default=30.0, help="the training budget")
    parser.add_argument("--check-every", type=int, default=200, help="batches between points")
    parser.add_argument("--curve-questions", type=int, default=50,
                        help="validation questions per task for each point of the curve")
    parser.add_argument("--output", help="JSON path (default benchmarks/results/dnc_babi.json)")
    args, task_flags = parser.parse_known_args()

    import keras
    import numpy as np
    from memn2n import task_splits
    from results_io import default_path, header, revision, write_results

    ran = revision()  # what the run trains on, before anything can change it

    from keras_attn.models.batching import EndlessBatches
    from keras_attn.training import cli, runner
    from keras_attn.training.callbacks import TimeBudget
    from keras_attn.training.tasks.memn2n import babi, dnc_task, words
    from keras_attn.training.tasks.memn2n.task import print_figures

    files = babi.find_task_files(args.data_dir)
    tasks = sorted(files) if args.tasks == "all" else [int(t) for t in args.tasks.split(",")]
    per_task = task_splits(args.data_dir, tasks)
    splits = {part: [q for t in tasks for q in per_task[t][part]]
              for part in ("train", "validation", "test")}
    names = {t: per_task[t]["name"] for t in tasks}
    data = dnc_task.prepared(splits, names, "babi")
    task_args = cli.task_options(
        ["train", "dnc-babi", "--quiet", "--no-export", "--epochs", "1000000",
         "--steps-per-epoch", str(args.check_every), *task_flags])
    runner.set_seed(task_args.seed)
    task = dnc_task.DNCBabiTask()
    model = task.build_model(task_args, data, runner.resolve_jit(task, task_args.jit))
    settings = task.settings(task_args, data, model)
    rng = np.random.default_rng(0)
    curve_questions = [q for t in tasks for q in
                       rng.permutation(np.array(per_task[t]["validation"], dtype=object))
                       [:args.curve_questions].tolist()]
    print(f"{len(splits['train'])} training questions from tasks {tasks}; vocabulary "
          f"{len(data.vocab)}; backend {keras.backend.backend()}; "
          f"{model.count_params()} parameters; budget {args.minutes:g} min", flush=True)

    curve = []
    start = time.time()

    class Curve(keras.callbacks.Callback):
        batches = 0  # counted, as the budget may end the last check early

        def on_train_batch_end(self, batch, logs=None):
            self.batches += 1

        def on_epoch_end(self, epoch, logs=None):
            figures = task.figures(self.model, data.vocab, settings, curve_questions)
            point = {"batches": self.batches,
                     "questions": self.batches * task_args.batch_size,
                     "seconds": round(time.time() - start, 1),
                     "train_loss": float(logs["loss"]),
                     "validation_mean_error": figures["mean_error"],
                     "validation_failed": figures["failed"]}
            curve.append(point)
            print(f"  {point['batches']:>7} batches {point['seconds']:7.0f} s: training loss "
                  f"{point['train_loss']:.3f}, validation error "
                  f"{100 * point['validation_mean_error']:5.1f} % "
                  f"({point['validation_failed']} tasks > 5 %)", flush=True)

    budget = TimeBudget(args.minutes * 60)
    train = EndlessBatches(words.QuestionBatches(
        *words.encode(splits["train"], data.vocab, task_args.max_story_words),
        task_args.batch_size, dnc_task.BUCKET, shuffle=True, seed=task_args.seed))
    model.fit(train, epochs=task_args.epochs, steps_per_epoch=args.check_every,
              callbacks=[budget, Curve()], verbose=0)
    seconds = time.time() - start
    test = task.figures(model, data.vocab, settings, splits["test"])
    kind = sorted({per_task[t]["kind"] for t in tasks})
    print_figures(f"test ({', '.join(kind)}) after {seconds / 60:.1f} min:", test, names)
    print(f"DNC paper (10k joint): mean {PAPER_MEAN_ERROR} %, {PAPER_FAILED} failed")
    result = header("dnc_babi", args) | ran | {
        "command": " ".join(["python", "benchmarks/dnc_babi.py", *sys.argv[1:]]),
        "task_flags": task_flags, "model": runner.model_config(model),
        "training_questions": len(splits["train"]), "figure_on": kind,
        "seconds": round(seconds, 1), "curve": curve, "test": test,
        "paper": {"mean_error": PAPER_MEAN_ERROR / 100, "failed": PAPER_FAILED},
    }
    write_results(result, args.output or default_path("dnc_babi"))


if __name__ == "__main__":
    main()
