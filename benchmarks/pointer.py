"""Pointer networks on sorting, planar convex hull and TSP, against the issue's targets.

    python benchmarks/pointer.py [--tasks sort,hull,tsp] [--test-instances 10000]
                                 [--runs-dir runs]

Without `--runs-dir`, each task trains with its CLI defaults (the
`keras-attn train pointer-<task>` code path, `runner.fit_in_process`), then is tested. With
`--runs-dir DIR`, the runs that `keras-attn train pointer-<task>` left in
`DIR/pointer-<task>/` are tested instead, and their budget and training time
come from their `meta.json`. Either way the test sets are fresh instances of one
size each, `--test-instances` per size, seeded apart from training, and this
prints and writes (JSON):

* the training budget: instances, epochs, steps, seconds, backend;
* the learning curve: loss, validation loss and validation step accuracy per epoch;
* per test size and decoder (greedy; beam search of the run's width, or of
  `--beam-width` where the run decodes greedily; for TSP also the shortest tour
  of the beam): sorting accuracy, hull accuracy and area coverage, tour length
  and its ratio to the optimal (Held–Karp) length, and the share of valid outputs;
* each target of the issue and whether it is met.
"""

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TASK_NAMES = ("sort", "hull", "tsp")
# (size, decoder, figure, comparison, target): Vinyals et al. 2015; "Order Matters" 2016.
TARGETS = {
    "sort": [("N=5", "greedy", "accuracy", ">=", 0.99),
             ("N=10", "greedy", "accuracy", ">=", 0.90)],
    "hull": [("N=5", "each", "accuracy", ">=", 0.92),
             ("N=10", "each", "accuracy", ">=", 0.87),
             ("N=5", "each", "area_coverage", ">=", 0.998),
             ("N=10", "each", "area_coverage", ">=", 0.998)],
    "tsp": [("N=5", "best", "mean_length", "<=", 2.125),  # 2.12, the optimum, to 2 places
            ("N=10", "best", "mean_length", "<=", 2.89),
            ("N=5", "best", "valid", ">=", 1.0),
            ("N=10", "best", "valid", ">=", 1.0)],
}
PAPER = {
    "sort": "Order Matters (2016), Table 1: N = 5 94 %, N = 10 57 % at best",
    "hull": "Vinyals et al. 2015, Table 1 (trained on 5–50): N = 5 92.0 %, N = 10 87.0 %, "
            "area 99.6–99.8 %; N = 50 69.6 %",
    "tsp": "Vinyals et al. 2015, Table 2: N = 5 2.12 (optimal 2.12), N = 10 2.88 (optimal 2.87)",
}


def task_args(name, extra=()):
    from keras_attn.training import cli

    return cli.task_options(["train", name, "--quiet", "--no-export", *extra])


def best_decoder(by_decoder):
    """For TSP, the beam decoder that returns the shortest tour of the beam."""
    shortest = [label for label in by_decoder if label.endswith("shortest")]
    return shortest[0] if shortest else "greedy"


def check_targets(task, figures):
    checks = []
    for size, decoder, key, comparison, target in TARGETS[task]:
        by_decoder = figures.get(size)
        if by_decoder is None:
            continue
        if decoder == "each":
            labels = list(by_decoder)
        else:
            labels = [best_decoder(by_decoder) if decoder == "best" else decoder]
        for label in labels:
            value = by_decoder[label][key]
            met = value >= target if comparison == ">=" else value <= target
            checks.append({"size": size, "decoder": label, "figure": key, "target":
                           f"{comparison} {target}", "value": value, "met": bool(met)})
    return checks


def run_task(task, args):
    import keras

    from keras_attn.training import runner, tasks
    from keras_attn.training.task import RunMeta
    from keras_attn.training.tasks.pointer import task as pointer

    name = f"pointer-{task}"
    spec = pointer.SPECS[name]
    if args.runs_dir:
        run_dir = os.path.join(args.runs_dir, name)
        meta, model, _, _ = runner.load_run(run_dir)
        with open(os.path.join(run_dir, "history.json")) as f:
            history = json.load(f)
    else:
        flags = task_args(name)
        pointer_task = tasks.get(name)
        data, model, record = runner.fit_in_process(pointer_task, flags)
        history = record["records"]["history"]
        meta = RunMeta(task=name, name=name, config=runner.model_config(model),
                       settings=pointer_task.settings(flags, data, model), data={},
                       training={"backend": keras.backend.backend(), "seconds": record["seconds"],
                                 "batch_size": flags.batch_size, "epochs": record["epochs"]})
    settings, seconds = meta.settings, meta.training.get("seconds")
    sizes = tuple(settings.get("test_sizes", spec.test_sizes))
    start = time.time()
    beam_width = int(settings["beam_width"])
    if beam_width == 1 and args.beam_width:
        beam_width = args.beam_width
    figures = pointer.figures(model, spec, int(settings["seed"]), args.test_instances, sizes,
                              beam_width)
    budget = {"backend": meta.training.get("backend"), "epochs": meta.training.get("epochs"),
              "batch_size": meta.training.get("batch_size"),
              **{k: settings.get(k) for k in ("train_instances", "learning_rate",
                                               "train_sizes", "beam_width")},
              **{k: meta.config.get(k) for k in ("encoder", "units", "encoder_layers",
                                                  "glimpses")}}
    budget["steps"] = budget["epochs"] * -(-budget["train_instances"] // budget["batch_size"])
    return {"task": task, "budget": budget, "train_seconds": seconds,
            "test_seconds": time.time() - start, "history": history, "figures": figures,
            "targets": check_targets(task, figures)}


def print_task(result):
    from keras_attn.training.tasks.pointer.task import print_figures

    budget = result["budget"]
    print(f"\npointer-{result['task']}: {budget['train_instances']} instances × "
          f"{budget['epochs']} epochs ({budget['steps']} steps of {budget['batch_size']}), "
          f"N ∈ {budget['train_sizes']}, {budget['encoder']} encoder, on {budget['backend']}: "
          f"{(result['train_seconds'] or 0) / 60:.1f} min training (data included)")
    history = result["history"]
    print("  epoch   loss     val_loss  val_step_accuracy")
    for epoch, values in enumerate(zip(history["loss"], history["val_loss"],
                                       history["val_step_accuracy"], strict=True)):
        print(f"  {epoch + 1:>5}   {values[0]:.4f}   {values[1]:.4f}    {values[2]:.4f}")
    print_figures(result["figures"])
    for check in result["targets"]:
        print(f"  target {check['size']} {check['decoder']} {check['figure']} {check['target']}: "
              f"{check['value']:.4f} {'met' if check['met'] else 'NOT MET'}")
    print(f"  anchor: {PAPER[result['task']]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASK_NAMES))
    parser.add_argument("--test-instances", type=int, default=10_000)
    parser.add_argument("--runs-dir", help="test the runs `keras-attn train` left here")
    parser.add_argument("--beam-width", type=int,
                        help="also test beam search of this width where the run decodes "
                        "greedily (sorting, hull)")
    parser.add_argument("--output", help="JSON path (default benchmarks/results/pointer.json)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other tasks already in the output file")
    args = parser.parse_args()

    import keras_attn.training  # noqa: F401, I001  (its TensorFlow settings, before Keras starts TensorFlow)

    import keras
    from results_io import default_path, write_results

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = sorted(set(tasks) - set(TASK_NAMES))
    if unknown:
        raise SystemExit(f"--tasks: unknown {unknown}; expected some of {TASK_NAMES}")
    output = args.output or default_path("pointer")
    command = " ".join(["python", "benchmarks/pointer.py", *sys.argv[1:]])
    result = {"backend": keras.backend.backend(), "test_instances": args.test_instances,
              "tasks": {}}
    if args.merge and os.path.exists(output):
        with open(output) as f:
            result = json.load(f)
    for task in tasks:
        result["tasks"][task] = {**run_task(task, args), "command": command}
        print_task(result["tasks"][task])
    write_results(result, output)


if __name__ == "__main__":
    main()
