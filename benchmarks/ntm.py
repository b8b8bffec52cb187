"""Neural Turing machine on its four algorithmic tasks (Graves et al. 2014, §4),
and the differentiable neural computer on copy and repeat copy (`--model dnc`).

    python benchmarks/ntm.py [--tasks copy,associative-recall,repeat-copy,priority-sort]
                             [--seeds 10] [--test-sequences 10000] [--workers 2]
    python benchmarks/ntm.py --model dnc      # dnc-copy, dnc-repeat-copy

Any other flag is a `keras-attn train ntm-<task>` flag for the seed-0 run of every task
given (`--tasks priority-sort --curriculum 0`, say).

Every run trains with the task's CLI defaults (`keras-attn train ntm-<task>`:
LSTM controller of 100, memory 128 × 20, RMSprop 3e-4 with momentum 0.9, clip
norm 10, batch 8, validation every 1,000 sequences; `dnc-<task>` the same but a
memory of 64 × 20), and prints and writes:

* the learning curve: training cost (bits per sequence) and validation bit errors
  against sequences seen;
* sequences and wall time until the validation bit errors first fell below 0.1
  per sequence ("converged");
* the test figures on `--test-sequences` fresh sequences per setting, trained
  lengths and longer ones (generalisation).

`--task-seeds N` trains every task of `--tasks` at seeds S … S+N-1 (`--first-seed S`,
default 0) with its CLI defaults
(each keeps its best validation check's weights and, as `--restarts 3` does, trains
from seed S + 1000·k when the runs before it have not converged, keeping the fewest
validation bit errors) and reports every seed's test figures and the worst. Copy also
runs `--seeds` seeds for stability, one run each (`--restarts 1`).
Those runs do not stop early: each trains its whole `--stability-sequences`; a run
counts as diverged if its loss is ever non-finite, and as a late spike if its
validation bit errors, once below 0.1, end above 1 (its kept weights are its best
check's either way).

`--mixed-precision-steps N` adds a copy run of N training steps under the
`mixed_float16` policy and reports whether every loss stayed finite.

Runs go to `--workers` processes; the backend is JAX when it is installed, else
TensorFlow (on this CPU a training step takes the same time on both; JAX compiles
the step buckets a little faster).
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TASK_NAMES = {
    "ntm": ("copy", "associative-recall", "repeat-copy", "priority-sort"),
    "dnc": ("copy", "repeat-copy"),
}
# What the anchors report, for the printed comparison.
PAPER = {
    "ntm-copy": "loudinthecloud/pytorch-ntm: about 0 bits after about 17k sequences (batch 1); "
                "Graves et al. Fig. 3",
    "ntm-associative-recall": "Collier & Beel 2018: generalises perfectly to 12 items; "
                              "Graves et al. Fig. 10",
    "ntm-repeat-copy": "Graves et al. Fig. 7",
    "ntm-priority-sort": "Graves et al. Fig. 16",
    "dnc-copy": "no published DNC copy curve; compare `python benchmarks/ntm.py --tasks copy`",
    "dnc-repeat-copy": "deepmind/dnc trains repeat copy (its train.py), with no published "
                       "figure; compare the NTM's",
}



def task_args(task_name, extra):
    from keras_attn.training import cli

    return cli.task_options(["train", task_name, "--quiet", "--no-export", *extra])


def one_run(job):
    """Trains one model; returns its curve and figures (in a worker)."""
    import keras_attn.training  # noqa: F401, I001  (its TensorFlow settings, before Keras starts TensorFlow)


    from keras_attn.training import runner, tasks
    from keras_attn.training.tasks.ntm import task as ntm

    name = f"{job['model']}-{job['task']}"
    mixed = ["--mixed-precision"] if job.get("mixed_precision") else []
    args = task_args(name, ["--seed", str(job["seed"]), *mixed, *job["flags"]])
    bit_task = tasks.get(name)
    _, model, record = runner.fit_in_process(bit_task, args)
    curve = record["records"]["curve"]
    result = {"task": job["task"], "seed": job["seed"], "seconds": round(record["seconds"], 1),
              "sequences": record["sequences"], "converged_at": record["converged_at"],
              "kept": record.get("kept"),
              # With `--restarts`: every restart's seed and validation figures, and the
              # seed whose run the model is (its curve and figures are that run's).
              "restarts": record.get("restarts"), "kept_seed": record.get("kept_seed"),
              "nonfinite": record["diverged"], "curve": curve, "flags": job["flags"]}
    final = curve[-1]["validation_bit_errors"] if curve else float("nan")
    # A late spike (converged, then above 1 at the last check) no longer reaches the
    # model, which keeps its best check's weights; it is reported beside it.
    result["late_spike"] = bool(record["converged_at"] and final > 1.0)
    result["diverged"] = bool(record["diverged"])
    if job.get("test_sequences"):
        result["test"] = ntm.figures(model, bit_task.spec_for(args), job["seed"],
                                     job["test_sequences"])
    return result


def print_run(run):
    reached = run["converged_at"]
    when = (f"converged after {reached['sequences']} sequences ({reached['seconds']:.0f} s)"
            if reached else "did not converge")
    print(f"  {run['task']:<19} seed {run['seed']}: {when}; trained {run['sequences']} "
          f"sequences in {run['seconds']:.0f} s" + ("; DIVERGED" if run["diverged"] else "")
          + ("; the last check spiked above 1 bit (the best check's weights are kept)"
             if run.get("late_spike") else "") + restarts_summary(run),
          flush=True)


def restarts_summary(run):
    """`; restarts: …` naming each restart's kept validation bit errors, or nothing."""
    if not run.get("restarts"):
        return ""
    return ("; restarts (validation bit errors): " + ", ".join(
        f"seed {r['seed']} {r['validation_bit_errors']:.3f}" for r in run["restarts"])
        + f"; the curve and figures are seed {run['kept_seed']}'s")


def print_curve(run, every=5):
    print(f"{run['task']} learning curve (seed {run['seed']}): sequences, training cost "
          "(bits/sequence), validation bit errors/sequence")
    points = run["curve"]
    for i, point in enumerate(points):
        if i % every == every - 1 or i == len(points) - 1 or i == 0:
            print(f"  {point['sequences']:>7}  {point['train_cost_bits']:9.3f}  "
                  f"{point['validation_bit_errors']:8.3f}")


def seed_table(task, runs, task_flags=()):
    """Each seed's test figures at every setting, printed, and the worst seed's."""
    settings = list(runs[0]["test"])
    trained_with = " ".join(task_flags) or "CLI defaults"
    print(f"\n{task}, {trained_with}, {len(runs)} seeds: bit errors a sequence "
          "(data bits / end-marker bits where the task has a marker)")
    print("  seed  runs  converged  kept  " + "  ".join(f"{s:>18}" for s in settings))
    rows = []
    for run in sorted(runs, key=lambda r: r["seed"]):
        reached, kept = run["converged_at"], run.get("kept") or {}
        cells = []
        for setting in settings:
            entry = run["test"][setting]
            cells.append(f"{entry['bit_errors']:7.3f}" + (
                f" ({entry['data_bit_errors']:.2f}/{entry['marker_errors']:.2f})"
                if "marker_errors" in entry else ""))
        runs_trained = len(run.get("restarts") or [None])
        print(f"  {run['seed']:>4}  {runs_trained:>4}  {reached['sequences'] if reached else '-':>9}  "
              f"{kept.get('sequences', '-'):>5}  " + "  ".join(f"{c:>18}" for c in cells))
        rows.append({"seed": run["seed"], "converged_at": reached and reached["sequences"],
                     "kept_at": kept.get("sequences"), "sequences": run["sequences"],
                     "seconds": run["seconds"], "test": run["test"],
                     "restarts": run.get("restarts"), "kept_seed": run.get("kept_seed")})
    worst = {s: max(r["test"][s]["bit_errors"] for r in rows) for s in settings}
    print("  worst " + "  ".join(f"{s}: {v:.3f}" for s, v in worst.items()))
    return {"runs": rows, "worst_bit_errors": worst}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(TASK_NAMES), default="ntm")
    parser.add_argument("--tasks", help="comma-separated (default: all of the model's)")
    parser.add_argument("--seeds", type=int, default=10, help="copy stability runs")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="the seed of each task's first run (the others follow it)")
    parser.add_argument("--task-seeds", type=int, default=1,
                        help="train every task of --tasks at N seeds from --first-seed with its CLI "
                             "defaults and report each seed's test figures and the worst")
    parser.add_argument("--stability-sequences", type=int, default=25_000)
    parser.add_argument("--test-sequences", type=int, default=10_000)
    parser.add_argument("--mixed-precision-steps", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sequences", type=int, help="override every task's budget (quick checks)")
    parser.add_argument("--output", help="JSON path (default benchmarks/results/MODEL.json)")
    args, task_flags = parser.parse_known_args()

    from results_io import (
        default_path,
        machine,
        revision,
        worker_backend,
        worker_pool,
        write_results,
    )

    known = TASK_NAMES[args.model]
    tasks = [t.strip() for t in (args.tasks or ",".join(known)).split(",") if t.strip()]
    unknown = sorted(set(tasks) - set(known))
    if unknown:
        raise SystemExit(f"--tasks: unknown {unknown} for {args.model}; expected some of {known}")
    backend = worker_backend()
    ran = revision()  # what the runs train on, before anything can change it
    budget = ["--sequences", str(args.sequences)] if args.sequences else []
    first = args.first_seed
    jobs = [{"task": t, "seed": first, "flags": budget + task_flags,
             "test_sequences": args.test_sequences} for t in tasks]
    jobs += [{"task": t, "seed": seed, "flags": budget + task_flags, "seed_run": True,
              "test_sequences": args.test_sequences}
             for t in tasks for seed in range(first + 1, first + args.task_seeds)]
    if "copy" in tasks:
        stability = ["--restarts", "1", "--patience", "0", "--sequences",
                     str(args.sequences or args.stability_sequences)]
        jobs += [{"task": "copy", "seed": seed, "flags": stability,
                  "stability": True, "test_sequences": 1000} for seed in range(1, args.seeds)]
    if args.mixed_precision_steps:
        # One check per 1,000 sequences at batch 8: 125 steps a check.
        checks = max(1, round(args.mixed_precision_steps / 125))
        jobs.append({"task": "copy", "seed": 0, "mixed_precision": True,
                     "flags": ["--restarts", "1", "--patience", "0", "--sequences",
                               str(checks * 1000)]})
    for job in jobs:
        job["model"] = args.model
    output = args.output or default_path(args.model)
    partial_path = output.removesuffix(".json") + ".partial.json"
    print(f"{len(jobs)} runs on {args.workers} workers, backend {backend}", flush=True)
    start = time.time()
    runs = []
    with worker_pool(args.workers, backend) as pool:
        for job, run in zip(jobs, pool.map(one_run, jobs), strict=True):
            run["stability"] = bool(job.get("stability"))
            run["mixed_precision"] = bool(job.get("mixed_precision"))
            runs.append(run)
            print_run(run)
            # Written as they finish, so a long benchmark stopped early keeps its runs.
            write_results({"partial": True, "runs": runs}, partial_path, quiet=True)
    wall = time.time() - start

    result = {"model": args.model, **ran, "machine": machine(), "backend": backend,
              "workers": args.workers,
              "task_flags": task_flags,
              "wall_seconds": round(wall, 1),
              "command": " ".join(["python", "benchmarks/ntm.py", *sys.argv[1:]]), "tasks": {}}
    for task in tasks:
        main_run = next(r for r in runs if r["task"] == task and r["seed"] == first
                        and not r["mixed_precision"])
        print()
        print_curve(main_run)
        print(f"test, {args.test_sequences} fresh sequences per setting:")
        from keras_attn.training.tasks.ntm.task import print_figures

        print_figures(main_run["test"])
        reached = main_run["converged_at"]
        print(f"  converged (validation bit errors < 0.1) after {reached['sequences']} "
              "sequences" if reached else "  not converged in the budget; last validation bit "
              f"errors {main_run['curve'][-1]['validation_bit_errors']:.3f}")
        print(f"  anchor: {PAPER[f'{args.model}-{task}']}")
        result["tasks"][task] = main_run
        if args.task_seeds > 1:
            result["tasks"][task]["seeds"] = seed_table(
                task, [r for r in runs if r["task"] == task and not r["mixed_precision"]
                       and not r["stability"]], task_flags)
    if "copy" in tasks:
        copies = [r for r in runs if r["task"] == "copy" and not r["mixed_precision"]]
        converged = [r for r in copies if r["converged_at"]]
        diverged = [r for r in copies if r["diverged"]]
        spiked = [r for r in copies if r.get("late_spike")]
        at = sorted(r["converged_at"]["sequences"] for r in converged)
        print(f"\ncopy stability: {len(copies)} seeds, {len(converged)} converged "
              f"(validation bit errors < 0.1; after {at} sequences), {len(diverged)} with a "
              f"non-finite loss, {len(spiked)} with a late spike (best weights kept)")
        length40 = [r["test"]["length 40"]["bit_errors"] for r in copies if "test" in r]
        print(f"  length-40 bit errors per seed: {[round(e, 3) for e in length40]}")
        result["copy_stability"] = {
            "seeds": len(copies), "converged": len(converged), "diverged": len(diverged),
            "late_spikes": len(spiked),
            "converged_at_sequences": at,
            "runs": [{k: r[k] for k in ("seed", "sequences", "seconds", "converged_at",
                                        "diverged", "nonfinite")}
                     | {"final_validation_bit_errors": r["curve"][-1]["validation_bit_errors"],
                        "test": r.get("test")} for r in copies],
        }
    mixed = [r for r in runs if r["mixed_precision"]]
    if mixed:
        run = mixed[0]
        steps = run["sequences"] // 8
        finite = not run["nonfinite"]
        print(f"\nmixed_float16 copy run: {steps} steps, every loss finite: {finite}; final "
              f"validation bit errors {run['curve'][-1]['validation_bit_errors']:.3f}")
        result["mixed_float16"] = {"steps": steps, "finite": finite, "curve": run["curve"]}
    print(f"wall time {wall / 60:.1f} min")
    write_results(result, output)
    os.remove(partial_path)


if __name__ == "__main__":
    main()
