"""The figures `keras-attn train` prints, as a result file.

Runs one `keras-attn train ...` command per `--run` (each in its own work folder,
without an export), and writes what each printed to its run folder's
`figures.json`, with its `meta.json`'s model arguments and training record, the
command, the commit and the machine, to one JSON file. A page that quotes a training
command's own printout names that file.

    python benchmarks/cli_figures.py --output benchmarks/results/translator_quickstart.json \\
        --run "train translator" --run "train translator --attention luong-general"
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

from results_io import machine, revision, write_results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(command, folder):
    """Runs `keras-attn COMMAND` with its work folder under `folder`; returns its record."""
    argv = shlex.split(command)
    if argv[:1] != ["train"] or len(argv) < 2:
        raise SystemExit(f"--run: expected 'train TASK [flags]'; received {command!r}")
    work = os.path.join(folder, "run")
    keras_attn = os.path.join(os.path.dirname(sys.executable), "keras-attn")
    full = [keras_attn, *argv, "--work-dir", work, "--no-export", "--no-tensorboard"]
    start = time.time()
    done = subprocess.run(full, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{command!r} failed:\n{done.stderr[-3000:]}")
    with open(os.path.join(work, "figures.json"), encoding="utf-8") as f:
        figures = json.load(f)
    with open(os.path.join(work, "meta.json"), encoding="utf-8") as f:
        meta = json.load(f)
    print(f"{command}: {json.dumps(figures)[:300]}", flush=True)
    return {"command": "keras-attn " + command, "seconds": round(time.time() - start, 1),
            "figures": figures, "model": meta["config"], "training": meta["training"],
            "printed": done.stdout.splitlines()[-40:]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", required=True,
                        help="a `train TASK [flags]` command (repeat for several)")
    parser.add_argument("--output", required=True, help="the JSON file to write")
    args = parser.parse_args()
    runs = []
    for command in args.run:
        with tempfile.TemporaryDirectory() as folder:
            runs.append(run(command, folder))
    write_results({"benchmark": "cli_figures", **revision(),
                   "machine": machine(),
                   "runs": runs}, args.output)


if __name__ == "__main__":
    main()
