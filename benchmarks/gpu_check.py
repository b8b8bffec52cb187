"""Every model family trained for a fixed number of steps on an accelerator (JAX),
float32 against `mixed_bfloat16`: throughput, step time, peak device memory.

    python benchmarks/gpu_check.py OUT_DIR [--dry-run] [--steps 200]

Families (built-in data, so nothing is read from disk): the RNN translator and
the Transformer (dates), MemN2N and the DNC (the built-in stories, the DNC at the
size of its bAbI paper), the pointer network (TSP) and the NTM (copy). Each runs `--steps` training steps after `--warmup`
untimed ones (compilation), through the same task code as `keras-attn train`.
Writes `OUT_DIR/gpu_check.json` (examples/s, tokens/s where the family has
tokens, median step time, peak device memory where the device reports it) and
each family's trained weights as `OUT_DIR/<family>-<precision>.npz`.

`--dry-run` runs the same code path at tiny sizes and steps (a CPU check for CI):
every family in float32, and MemN2N in `mixed_bfloat16` too (the precision is a
policy switch, the same path for every family).
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_attn.training import cli, runner, tasks  # noqa: E402

# Per family: the task, its flags at full size and at dry-run size, the tokens an
# example carries (None: no tokens), and how many examples a step trains.
FAMILIES = {
    "translator-rnn": ("translator", ["--train-size", "20000"],
                       ["--train-size", "64", "--test-size", "8", "--embedding-dim", "8",
                        "--encoder-units", "8", "--decoder-units", "8",
                        "--attention-units", "8"]),
    "translator-transformer": ("translator", ["--model", "transformer", "--train-size", "20000"],
                               ["--model", "transformer", "--train-size", "64",
                                "--test-size", "8", "--model-dim", "16",
                                "--feedforward-dim", "32"]),
    "memn2n": ("memn2n", ["--train-questions", "3000"],
               ["--kinds", "1", "--train-questions", "64", "--test-questions", "16"]),
    "dnc-babi": ("dnc-babi", ["--train-questions", "3000"],
                 ["--kinds", "1", "--train-questions", "64", "--test-questions", "16",
                  "--memory-size", "8", "--memory-width", "4", "--read-heads", "1",
                  "--controller-units", "8"]),
    "pointer-tsp": ("pointer-tsp", [],
                    ["--train-instances", "64", "--validation-instances", "16",
                     "--test-instances", "8", "--units", "8", "--encoder-layers", "1",
                     "--heads", "2"]),
    "ntm-copy": ("ntm-copy", [],
                 ["--controller-units", "8", "--memory-size", "8", "--memory-width", "4",
                  "--test-sequences", "4"]),
}


class StepClock(keras.callbacks.Callback):
    """Times each training step after `warmup`; stops `fit` after `warmup + steps`."""

    def __init__(self, warmup, steps):
        super().__init__()
        self.warmup, self.steps, self.seen, self.times = warmup, steps, 0, []

    def on_train_batch_begin(self, batch, logs=None):
        self.start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        if logs is not None and "loss" in logs:
            float(logs["loss"])  # waits for the step (JAX dispatches asynchronously)
        if self.seen >= self.warmup:
            self.times.append(time.perf_counter() - self.start)
        self.seen += 1
        if self.seen >= self.warmup + self.steps:
            self.model.stop_training = True


def peak_memory():
    """Peak bytes in use on the first device, where the device reports it."""
    try:
        import jax

        stats = jax.devices()[0].memory_stats() or {}
        return stats.get("peak_bytes_in_use")
    except Exception:  # noqa: BLE001 (a CPU reports nothing, which is fine)
        return None


def run_family(name, precision, args, out_dir):
    task_name, full, tiny = FAMILIES[name]
    flags = tiny if args.dry_run else full
    batch = 8 if args.dry_run else args.batch_size
    argv = ["train", task_name, *flags, "--batch-size", str(batch), "--no-export", "--quiet",
            "--no-tensorboard", "--seed", "0", "--restarts", "1"]  # one run: it is timed
    if not tasks.get(task_name).uses_fit:
        # Its own loop of train_on_batch: the steps are sequences / batch.
        argv += ["--sequences", str(batch * (args.steps + args.warmup)),
                 "--check-every", str(batch * (args.steps + args.warmup))]
    else:
        argv += ["--epochs", "1000"]  # StepClock stops it
    task_args = cli.task_options(argv)
    keras.config.set_dtype_policy(precision)
    task = tasks.get(task_args.task)
    clock = StepClock(args.warmup, args.steps)
    try:
        data, model, record = runner.fit_in_process(task, task_args, [clock])
    finally:
        keras.config.set_dtype_policy("float32")
    if clock.times:
        step = float(np.median(clock.times))
        steps = len(clock.times)
    else:  # a task whose loop takes no callbacks: its whole run, compilation included
        steps = args.steps + args.warmup
        step = record["seconds"] / steps
    weights = os.path.join(out_dir, f"{name}-{precision}.npz")
    np.savez(weights, *[np.asarray(w, "float32") for w in model.get_weights()])
    result = {"family": name, "task": task_name, "precision": precision, "batch_size": batch,
              "timed_steps": steps, "step_seconds": step, "examples_per_second": batch / step,
              "peak_bytes": peak_memory(), "weights": os.path.basename(weights)}
    tokens = _tokens_per_example(task_name, data)
    if tokens:
        result["tokens_per_second"] = tokens * batch / step
    print(f"  {name:<24} {precision:<15} step {1000 * step:8.2f} ms  "
          f"{result['examples_per_second']:10.1f} examples/s"
          + (f"  {result['tokens_per_second']:10.0f} tokens/s" if tokens else ""), flush=True)
    return result


def _tokens_per_example(task_name, data):
    """Mean target tokens an example carries (the translator), else None."""
    if task_name != "translator":
        return None
    targets = data.train_ids[1]
    return float(np.mean([len(t) + 1 for t in targets]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, a CPU check")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--families", default=",".join(FAMILIES))
    args = parser.parse_args(argv)
    if args.dry_run:
        args.steps, args.warmup = min(args.steps, 2), min(args.warmup, 1)
    os.makedirs(args.out_dir, exist_ok=True)
    device = _device()
    print(f"backend {keras.backend.backend()}, device {device}")
    results = []
    start = time.time()
    for name in args.families.split(","):
        for precision in ("float32", "mixed_bfloat16"):
            if args.dry_run and precision != "float32" and name != "memn2n":
                continue
            results.append(run_family(name, precision, args, args.out_dir))
    summary = {"device": device, "dry_run": args.dry_run, "steps": args.steps,
               "warmup": args.warmup, "seconds": round(time.time() - start, 1),
               "date": time.strftime("%Y-%m-%d"), "results": results,
               "command": " ".join(["python", "benchmarks/gpu_check.py", *(argv or sys.argv[1:])])}
    with open(os.path.join(args.out_dir, "gpu_check.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"wrote {os.path.join(args.out_dir, 'gpu_check.json')} ({summary['seconds']:.0f} s)")
    return summary


def _device():
    if keras.backend.backend() == "jax":
        import jax

        return str(jax.devices()[0].device_kind)
    return keras.backend.backend()


if __name__ == "__main__":
    main()
