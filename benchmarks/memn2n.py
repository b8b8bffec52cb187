"""MemN2N on bAbI (1k or 10k): per-task error, mean, failed tasks (Sukhbaatar et al. 2015).

    python benchmarks/memn2n.py --data-dir DIR [--protocol paper] [--joint] [--tasks 1,2]

`DIR` holds the bAbI v1.2 files (`qaN_<name>_train.txt`, and `_test.txt` if you
have them; `en` or `en-10k`). First every file is parsed (the loader check:
lines, stories and questions per file). Then, per task, single-task runs with
different seeds train with the task's defaults, which follow the authors' code
(PE LS RN: 3 hops, d = 20, adjacent tying, their position encoding, temporal
encoding, 10 % random noise; 20 epochs of linear start then 100 more, SGD 0.005
halved every 25 epochs, batch 32, each gradient clipped to 40, memory 50; the
differences table is in docs/guides/memn2n.md). `--joint` adds runs over all
tasks together (d = 50, 30 + 60 epochs, halved every 15).

Protocols:

* `--protocol paper`: every run trains on 90 % of each `_train.txt` (10 % of its
  stories are the validation split), 10 seeds per task, and the kept run is the
  paper's choice, the lowest training error (§4.2: "picked the one with the
  lowest training error"), ties broken by validation error.
* `--protocol quick` (default): 5 seeds, the kept run has the lowest validation
  error.

The figure is the kept run's error on the `_test.txt` files. Without them a
further 10 % of the stories is held out as a stand-in test split, used for
nothing but the figure (those runs train on 80 %, not 90 %, of the file).

Runs go to `--workers` processes (default 2), fresh interpreters; their Keras
backend is JAX when it is installed (the fastest here), else TensorFlow, and
`KERAS_BACKEND` overrides it. The JSON records the backend the workers ran.
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PAPER_PE_LS_RN = {  # Sukhbaatar et al. 2015, Table 1, 1k, "PE LS RN": error %
    1: 0.0, 2: 8.3, 3: 40.3, 4: 2.8, 5: 13.1, 6: 7.6, 7: 17.3, 8: 10.0, 9: 13.2, 10: 15.1,
    11: 0.9, 12: 0.2, 13: 0.4, 14: 1.7, 15: 0.0, 16: 1.3, 17: 51.0, 18: 11.1, 19: 82.8, 20: 0.0,
}



def _task_args(extra):
    from keras_attn.training import cli

    return cli.task_options(
        ["train", "memn2n", "--quiet", "--no-export", "--no-tensorboard", *extra])


# The authors' MATLAB code on 1k, 3 hops PE LS RN (test error %), as tabulated in
# vinhkhuc/MemN2N-babi-python's benchmarks/README.md: one task at a time, and joint.
AUTHORS_CODE_SINGLE = {
    1: 0.1, 2: 8.2, 3: 41.8, 4: 4.4, 5: 13.7, 6: 7.9, 7: 20.3, 8: 11.7, 9: 13.6, 10: 9.7,
    11: 0.7, 12: 0.0, 13: 0.3, 14: 0.9, 15: 0.0, 16: 0.4, 17: 51.0, 18: 10.5, 19: 81.4, 20: 0.0,
}
AUTHORS_CODE_JOINT = {
    1: 0.0, 2: 13.1, 3: 23.4, 4: 5.9, 5: 12.9, 6: 3.7, 7: 22.9, 8: 9.1, 9: 2.7, 10: 7.2,
    11: 0.8, 12: 0.1, 13: 0.1, 14: 4.2, 15: 0.0, 16: 1.2, 17: 43.6, 18: 10.5, 19: 86.7, 20: 0.0,
}
# Mean error % and failed tasks of the references: 1k single, 1k joint (authors'
# code), 10k joint (the paper, PE LS RN).
REFERENCE_MEANS = {"1k": {"single": (13.8, 11), "joint": (12.4, None)},
                   "10k": {"single": (None, None), "joint": (4.2, 3)}}

PROTOCOLS = {  # runs per task, the rule that keeps one of them
    "paper": {"runs": 10, "select": "training"},
    "quick": {"runs": 5, "select": "validation"},
}


def task_splits(data_dir, tasks):
    """Per task: train / validation / test (real, or a stand-in held out of train)."""
    from keras_attn.training.tasks.memn2n import babi

    files = babi.find_task_files(data_dir)
    out = {}
    for task in tasks:
        questions = babi.load_babi_file(files[task]["train"], task)
        rest, validation = babi.split_by_story(questions, 0.1, seed=task)
        if files[task]["test"]:
            train, test, kind = rest, babi.load_babi_file(files[task]["test"], task), "test"
        else:
            train, test = babi.split_by_story(rest, 1 / 9, seed=100 + task)
            kind = "held-out part of train"
        out[task] = {"train": train, "validation": validation, "test": test, "kind": kind,
                     "name": files[task]["name"]}
    return out


def one_run(job):
    """Trains one model; returns its validation and test figures (in a worker)."""
    import keras

    from keras_attn.training import runner, tasks
    from keras_attn.training.tasks.memn2n import task as memn2n

    args = _task_args(["--seed", str(job["seed"]), *job["flags"]])
    runner.set_seed(job["seed"])
    splits = {"train": [], "validation": [], "test": []}
    for task in job["tasks"]:
        for part in splits:
            splits[part] += job["splits"][task][part]
    names = {t: job["splits"][t]["name"] for t in job["tasks"]}
    data = memn2n.prepared(splits, names, "babi", args)
    vocab = data.vocab
    task = tasks.get("memn2n")
    model = task.build_model(args, data, runner.resolve_jit(task, args.jit))
    callbacks = task.callbacks(model, data, args)
    start = time.time()
    record = task.fit(model, data, args, callbacks, verbose=0)
    seconds = time.time() - start
    settings = task.settings(args, data, model)
    validation = memn2n.figures(model, vocab, settings, splits["validation"])
    test = memn2n.figures(model, vocab, settings, splits["test"])
    # Per task, without the training's random noise: a task that fails on held-out
    # stories either did not fit its training stories or did not generalise.
    fitted = memn2n.error_figures(memn2n.answer(model, vocab, settings, splits["train"])[0],
                                  splits["train"])
    return {
        "tasks": job["tasks"], "seed": job["seed"], "seconds": round(seconds, 1),
        "backend": keras.backend.backend(),
        "linear_start_epochs": record["linear_start_epochs"],
        "train_accuracy": float(record["records"]["history"]["accuracy"][-1]),
        "validation": validation, "test": test,
        "train_errors": {t: e["error"] for t, e in fitted["tasks"].items()},
    }


def best_run(runs, select):
    """The kept run: lowest validation error (then highest training accuracy), or
    with `select="training"` the paper's lowest training error (then validation)."""
    if select == "training":
        return min(runs, key=lambda r: (-r["train_accuracy"], r["validation"]["mean_error"]))
    return min(runs, key=lambda r: (r["validation"]["mean_error"], -r["train_accuracy"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--tasks", default="all")
    parser.add_argument("--protocol", choices=tuple(PROTOCOLS), default="quick")
    parser.add_argument("--runs", type=int, help="single-task runs per task (default: the "
                        "protocol's, 10 or 5)")
    parser.add_argument("--joint", action="store_true", help="also train jointly")
    parser.add_argument("--no-single", action="store_true",
                        help="only the joint runs (with --joint; e.g. on 10k)")
    parser.add_argument("--joint-runs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, help="override the paper's epochs (quick checks)")
    parser.add_argument("--output", help="JSON path (default benchmarks/results/memn2n.json)")
    args = parser.parse_args()
    protocol = PROTOCOLS[args.protocol]
    args.runs = args.runs or protocol["runs"]
    select = protocol["select"]

    from results_io import (
        default_path,
        machine,
        revision,
        worker_backend,
        worker_pool,
        write_results,
    )

    ran = revision()  # what the runs train on, before anything can change it

    from keras_attn.training.tasks.memn2n import babi
    from keras_attn.training.tasks.memn2n import task as memn2n_task

    # 1. The loader check: every line of every file.
    files = babi.find_task_files(args.data_dir)
    print(f"{'file':<44} {'lines':>6} {'stories':>7} {'questions':>9}")
    parsed = {}
    for task, entry in files.items():
        for split in ("train", "test"):
            if entry[split]:
                with open(entry[split], encoding="utf-8") as f:
                    lines = sum(1 for line in f if line.strip())
                questions = babi.load_babi_file(entry[split], task)
                stories = len({q.story_id for q in questions})
                parsed[os.path.basename(entry[split])] = [lines, stories, len(questions)]
                print(f"{os.path.basename(entry[split]):<44} {lines:>6} {stories:>7} "
                      f"{len(questions):>9}")
    print(f"parsed {sum(v[0] for v in parsed.values())} lines of {len(parsed)} files, no error")

    tasks = sorted(files) if args.tasks == "all" else [int(t) for t in args.tasks.split(",")]
    splits = task_splits(args.data_dir, tasks)
    backend = worker_backend()
    flags = ["--epochs", str(args.epochs)] if args.epochs else []
    jobs = [{"tasks": [t], "seed": seed, "splits": {t: splits[t]},
             "flags": flags} for t in tasks for seed in range(args.runs)
            if not args.no_single]
    if args.joint:
        jobs += [{"tasks": tasks, "seed": seed, "splits": splits,
                  "flags": flags} for seed in range(args.joint_runs)]
    print(f"\n{len(jobs)} runs on {args.workers} workers, backend {backend}")
    start = time.time()
    runs = []
    with worker_pool(args.workers, backend) as pool:
        for run in pool.map(one_run, jobs):
            runs.append(run)
            label = "joint" if len(run["tasks"]) > 1 else f"task {run['tasks'][0]}"
            print(f"  {label:<8} seed {run['seed']}: validation error "
                  f"{100 * run['validation']['mean_error']:5.1f} %, test error "
                  f"{100 * run['test']['mean_error']:5.1f} % ({run['seconds']:.0f} s)",
                  flush=True)
    wall = time.time() - start

    size = "10k" if max(len(splits[t]["train"]) for t in tasks) > 2000 else "1k"
    kind = {splits[t]["kind"] for t in tasks}
    table, mean, failed = {}, None, None
    if not args.no_single:
        single = {t: best_run([r for r in runs if r["tasks"] == [t]], select) for t in tasks}
        print(f"\nsingle-task ({args.protocol} protocol), best of {args.runs} by {select} error; "
              f"figure on: {', '.join(kind)}")
        reference = AUTHORS_CODE_SINGLE if size == "1k" else {}
        print(f"{'task':<32} {'ours %':>7} {'val %':>6} {'ref %':>6} {'support attn':>12}"
              f" {'(val)':>6}")
        for t in tasks:
            test_entry = single[t]["test"]["tasks"][str(t)]
            val_entry = single[t]["validation"]["tasks"][str(t)]
            table[t] = {"name": splits[t]["name"], "error": test_entry["error"],
                        "validation_error": val_entry["error"], "seed": single[t]["seed"],
                        "support_attention": test_entry.get("support_attention"),
                        "validation_support_attention": val_entry.get("support_attention"),
                        "paper_error": PAPER_PE_LS_RN.get(t, float("nan")) / 100
                        if size == "1k" else None,
                        "reference_error": reference[t] / 100 if t in reference else None}
            support = test_entry.get("support_attention")
            val_support = val_entry.get("support_attention")
            print(f"{t:>2} {splits[t]['name']:<29} {100 * test_entry['error']:7.1f} "
                  f"{100 * val_entry['error']:6.1f} {reference.get(t, float('nan')):6.1f} "
                  f"{'' if support is None else f'{100 * support:.0f} %':>12}"
                  f" {'' if val_support is None else f'{100 * val_support:.0f} %':>6}")
        mean = sum(e["error"] for e in table.values()) / len(table)
        failed = memn2n_task.failed_tasks(e["error"] for e in table.values())
        ref_mean, ref_failed = REFERENCE_MEANS[size]["single"]
        print(f"{size} single-task: mean error {100 * mean:.1f} % (reference {ref_mean} %), failed "
              f"tasks (> 5 %): {failed} (reference {ref_failed})")
    result = ran | {
        "machine": machine(),
        "backend": ", ".join(sorted({r["backend"] for r in runs})), "workers": args.workers, "wall_seconds": round(wall, 1),
        "data": size, "protocol": args.protocol, "selected_by": select,
        "runs_per_task": 0 if args.no_single else args.runs, "figure_on": sorted(kind),
        "parsed_files": parsed,
        "single_task": {"tasks": table, "mean_error": mean, "failed": failed},
        "runs": [{k: v for k, v in r.items() if k not in ("validation", "test")} |
                 {"validation_error": r["validation"]["mean_error"],
                  "test_error": r["test"]["mean_error"]} for r in runs],
        "command": " ".join(["python", "benchmarks/memn2n.py", *sys.argv[1:]]),
    }
    if args.joint:
        joint = best_run([r for r in runs if len(r["tasks"]) > 1], select)
        errors = {t: joint["test"]["tasks"][str(t)]["error"] for t in tasks}
        jmean = sum(errors.values()) / len(errors)
        jfailed = memn2n_task.failed_tasks(errors.values())
        ref_mean, ref_failed = REFERENCE_MEANS[size]["joint"]
        print(f"{size} joint (best of {args.joint_runs}): mean error {100 * jmean:.1f} % "
              f"(reference {ref_mean} %), failed {jfailed} (reference {ref_failed}); per task: "
              + ", ".join(f"{t}: {100 * e:.1f}" for t, e in errors.items()))
        print("  its training error per task (no random noise): " + ", ".join(
            f"{t}: {100 * e:.1f}" for t, e in joint["train_errors"].items()))
        result["joint"] = {"tasks": errors, "mean_error": jmean, "failed": jfailed,
                           "seed": joint["seed"], "train_errors": joint["train_errors"]}
    print(f"wall time {wall / 60:.1f} min")
    write_results(result, args.output or default_path("memn2n"))


if __name__ == "__main__":
    main()
