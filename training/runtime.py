"""Process-wide settings for training runs that keep TensorFlow out of non-TF backends."""

import json
import os
import random
import subprocess
import sys

import numpy as np


def set_seed(seed):
    """Seeds Python, NumPy and Keras (and torch on that backend).

    `keras.utils.set_random_seed` also seeds TensorFlow whenever it is installed,
    which imports it even on JAX; here TensorFlow is seeded only on its backend.
    """
    import keras

    if keras.backend.backend() == "tensorflow":
        keras.utils.set_random_seed(seed)
        return
    # What set_random_seed does besides TF: the global seed that Keras's
    # unseeded initializers and `keras.random` draw from (no public setter).
    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator
    from keras.src.utils.rng_utils import GLOBAL_RANDOM_SEED

    global_state.set_global_attribute(GLOBAL_RANDOM_SEED, seed)
    global_state.set_global_attribute(seed_generator.GLOBAL_SEED_GENERATOR, None)
    random.seed(seed)
    np.random.seed(seed)
    if keras.backend.backend() == "torch":
        import torch

        torch.manual_seed(seed)


JIT_HELP = "compiled training steps (default: on; off on the torch backend, as Keras's 'auto')"


def resolve_jit(flag):
    """`--jit`/`--no-jit` as given; when neither was given, on except on torch.

    On torch, `jit_compile=True` means `torch.compile`, which Keras's own
    `jit_compile="auto"` leaves off; with it the DNC's training step failed in
    inductor (a stride assertion once the sequence length changed, torch 2.14.1).
    """
    import keras

    return flag if flag is not None else keras.backend.backend() != "torch"


def run_callbacks(work_dir, tensorboard=None):
    """`BackupAndRestore` in `work_dir/backup` (a killed run resumes at its next epoch)
    and, if asked (by default on the TF backend), TensorBoard logs in `work_dir/logs`."""
    import keras

    callbacks = [keras.callbacks.BackupAndRestore(os.path.join(work_dir, "backup"))]
    if tensorboard is None:
        tensorboard = keras.backend.backend() == "tensorflow"
    if tensorboard:
        callbacks.append(keras.callbacks.TensorBoard(os.path.join(work_dir, "logs")))
    return callbacks


def export_in_tensorflow(task, run_dir, export_root):
    """Exports on the TensorFlow backend: here if active, else in a subprocess.

    Returns the version folder, or `None` when TensorFlow is not installed.
    """
    import keras

    if keras.backend.backend() == "tensorflow":
        from training import tasks

        return tasks.get(task).export(run_dir, export_root)
    env = {**os.environ, "KERAS_BACKEND": "tensorflow"}
    command = [
        sys.executable,
        "-m",
        "training.cli",
        "export",
        task,
        "--run-dir",
        run_dir,
        "--output-dir",
        export_root,
    ]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0 and "No module named 'tensorflow'" in result.stderr:
        return None
    if result.returncode != 0:
        raise RuntimeError(f"export failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout.strip().splitlines()[-1].split(" ", 2)[-1]


def export_and_report(task, run_dir, export_root):
    """`export_in_tensorflow`, printing where the export went or, without
    TensorFlow, the command that exports the run later. Returns the path or `None`."""
    path = export_in_tensorflow(task, run_dir, export_root)
    print(f"exported to {path}" if path else
          "TensorFlow is not installed, so there is no SavedModel export; where it is, run: "
          f"keras-attn export {task} --run-dir {run_dir}")
    return path


def save_run(work_dir, model, meta, **records):
    """A run folder: `model.keras`, `meta.json`, and each record as `<name>.json`
    (a learning curve, a fit history)."""
    model.save(os.path.join(work_dir, "model.keras"))
    with open(os.path.join(work_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    for name, record in records.items():
        with open(os.path.join(work_dir, f"{name}.json"), "w") as f:
            json.dump(record, f, indent=1)


def load_run(run_dir):
    """`(model, meta)` of a `save_run` folder; the model's layers must be registered."""
    import keras

    with open(os.path.join(run_dir, "meta.json")) as f:
        meta = json.load(f)
    model = keras.saving.load_model(os.path.join(run_dir, "model.keras"), compile=False,
                                    safe_mode=True)
    return model, meta
