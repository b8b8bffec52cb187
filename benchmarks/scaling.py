"""Data-parallel training throughput on 1 and 2 devices (JAX).

    python benchmarks/scaling.py [--devices 1,2] [--virtual-cpus]

Runs `keras-attn train TASK --distribute data-parallel` for the translator (RNN,
built-in dates) and MemN2N (built-in stories) in a fresh process per device
count, and reads the training time from each run's `meta.json`: examples/s is
training examples × epochs / the seconds `fit` took (compilation included,
validation included). `--virtual-cpus` splits the CPU into that many XLA host
devices (`--xla_force_host_platform_device_count`): on a CPU this measures that
the split is correct and what it costs, not a speed-up, since the devices share
the same cores. On a machine with several GPUs leave it out.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_io import default_path, write_results  # noqa: E402

RUNS = {  # task flags, and the training examples an epoch holds
    "translator": (["translator", "--train-size", "4000", "--epochs", "2", "--batch-size", "64"],
                   4000),
    "memn2n": (["memn2n", "--kinds", "1", "--train-questions", "2000", "--epochs", "10",
                "--batch-size", "32"], None),
}


def run(task, devices, virtual_cpus, work):
    flags, examples = RUNS[task]
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    if virtual_cpus:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    run_dir = os.path.join(work, f"{task}-{devices}")
    command = [sys.executable, "-m", "keras_attn.training.cli", "train", *flags, "--quiet",
               "--no-export", "--no-tensorboard", "--work-dir", run_dir,
               "--distribute", "data-parallel"]
    start = time.time()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "meta.json")) as f:
        meta = json.load(f)
    training = meta["training"]
    if examples is None:  # MemN2N: 90 % of the questions train (the default split)
        examples = round(0.9 * int(flags[flags.index("--train-questions") + 1]))
    seen = examples * training["epochs"]
    return {"task": task, "devices": training["distribution"]["devices"],
            "global_batch": training["distribution"]["global_batch"],
            "per_device_batch": training["distribution"]["per_device_batch"],
            "fit_seconds": round(training["seconds"], 1),
            "examples_per_second": round(seen / training["seconds"], 1),
            "command_seconds": round(time.time() - start, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="1,2")
    parser.add_argument("--virtual-cpus", action="store_true")
    parser.add_argument("--output", default=default_path("scaling"))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for task in RUNS:
            for devices in (int(d) for d in args.devices.split(",")):
                row = run(task, devices, args.virtual_cpus, work)
                rows.append(row)
                print(f"{task:<11} {row['devices']} device(s), batch {row['global_batch']} "
                      f"({row['per_device_batch']} a device): {row['examples_per_second']:8.1f} "
                      f"examples/s (fit {row['fit_seconds']} s)", flush=True)
    write_results({"virtual_cpus": args.virtual_cpus, "cpus": os.cpu_count(), "runs": rows,
                   "command": " ".join(["python", "benchmarks/scaling.py", *sys.argv[1:]])},
                  args.output)


if __name__ == "__main__":
    main()
