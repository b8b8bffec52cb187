"""What every task shares: the common flags, the run folder and its `RunMeta`,
callbacks, training, evaluation, the export's version folders, and `predict`.

`train` goes: the model's name and folders → seed and precision → the task's
data and model → `fit` (with `BackupAndRestore`, TensorBoard, the task's own
callbacks; Ctrl-C stops it with one line, leaving the backup to resume from) →
the run folder (`model.keras`, `meta.json`, the task's assets) → the held-out
figures → the export, on the TensorFlow backend (in a subprocess, answering in
JSON, when training ran on another backend).
"""

import argparse
import copy
import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import keras
import numpy as np
from keras.src.backend.common import global_state
from keras.src.random import seed_generator
from keras.src.utils.rng_utils import GLOBAL_RANDOM_SEED

from keras_attn.models.configured import ConfiguredModel
from keras_attn.training import distribution, options, tasks
from keras_attn.training.arguments import non_negative_int, positive_int
from keras_attn.training.callbacks import CtrlC, ResumeReport
from keras_attn.training.errors import UsageError
from keras_attn.training.task import RunMeta

#: `--seed` when none is given (the test suite moves it with `KERAS_ATTN_TEST_SEED`).
DEFAULT_SEED = 0

RUNS_ROOT = "runs"
RESTART_SEED_STEP = 1000  # restart k trains from seed + 1000·k: runs of nearby seeds share none
EXPORT_ROOT = "saved_models"
MODEL_FILE, META_FILE = "model.keras", "meta.json"
NAME_CHARACTERS = "letters, digits, '.', '_' and '-'"


# -- flags ----------------------------------------------------------------------------------
def add_shared_arguments(parser, task):
    """The flags of every `train TASK`, defined once."""
    run = parser.add_argument_group("run (every task)")
    run.add_argument(
        "--name",
        type=model_name,
        help="the model's name: its run folder runs/NAME and its export folder "
        "OUTPUT_DIR/NAME (default: the task's name with its built-in data, "
        f"'{task.name}-<data file stem>' with your own)",
    )
    run.add_argument("--seed", type=non_negative_int, default=DEFAULT_SEED)
    run.add_argument(
        "--restarts", type=positive_int, default=task.restarts,
        help="train up to this many models (restart k from seed SEED + "
        f"{RESTART_SEED_STEP}·k, the same data) and keep {task.restarts_keep} (default: "
        f"{task.restarts if task.restarts is not None else task.restarts_default})",
    )
    run.add_argument("--batch-size", type=positive_int, default=task.batch_size)
    run.add_argument(
        "--jit",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compile the training step (model.compile(jit_compile=…)); default: "
        + jit_default_help(task),
    )
    run.add_argument("--mixed-precision", action="store_true", help="mixed_float16 policy")
    run.add_argument("--tensorboard", action=argparse.BooleanOptionalAction, default=None,
                     help="TensorBoard logs in the run folder (default: on with TensorFlow)")
    run.add_argument("--work-dir",
                     help="the run folder: checkpoints to resume from, logs, the trained model "
                     "(default: runs/NAME)")
    run.add_argument("--output-dir", default=EXPORT_ROOT,
                     help="export root: the SavedModel goes to OUTPUT_DIR/NAME/<next version>/")
    run.add_argument("--no-export", action="store_true", help="train and evaluate only")
    run.add_argument("--quiet", action="store_true", help="no per-epoch or per-check lines")
    run.add_argument(
        "--distribute", choices=distribution.STRATEGIES, default="none",
        help="data-parallel: replicate the model on every device (JAX: every process's too, "
        "when KERAS_DISTRIBUTION_* are set; TensorFlow: MirroredStrategy) and split each "
        "batch of --batch-size (the global batch) between them",
    )


def jit_default_help(task):
    backends = ("tensorflow", "jax", "torch")
    on = [b for b in backends if task.jit_default(b)]
    return "on with " + ", ".join(on) if on else "off"


def model_name(text) -> str:
    """`--name`: a folder name TF Serving accepts as a model name."""
    if not text or not all(c.isalnum() or c in "._-" for c in text) or text[0] in ".-":
        raise argparse.ArgumentTypeError(
            f"must be {NAME_CHARACTERS}, not starting with '.' or '-'; received {text!r}")
    return text


def add_evaluate_arguments(parser, task):
    parser.add_argument("--run-dir", required=True,
                        help="a run folder of `train` (--work-dir), or an export's assets.extra/")
    task.add_evaluate_arguments(parser)


def add_export_arguments(parser):
    parser.add_argument("--run-dir", required=True, help="a run folder of `train` (--work-dir)")
    parser.add_argument("--output-dir", default=EXPORT_ROOT, help="export root")


# -- process settings ------------------------------------------------------------------------
def set_seed(seed):
    """Seeds Python, NumPy and Keras (and torch on that backend).

    `keras.utils.set_random_seed` also seeds TensorFlow whenever it is installed,
    which imports it even on JAX; here TensorFlow is seeded only on its backend.
    """
    if keras.backend.backend() == "tensorflow":
        keras.utils.set_random_seed(seed)
        return
    seed_keras(seed)
    random.seed(seed)
    np.random.seed(seed)
    if keras.backend.backend() == "torch":
        import torch

        torch.manual_seed(seed)


def seed_keras(seed):
    """What `keras.utils.set_random_seed` does for Keras itself: the global seed that
    its unseeded initializers and `keras.random` draw from, and a fresh generator.

    Keras has no public setter for these but `set_random_seed`, which also imports
    TensorFlow whenever it is installed; so this reaches the two private names it
    sets. `tests/training/test_runner.py` fails if they move in a Keras upgrade.
    """
    global_state.set_global_attribute(GLOBAL_RANDOM_SEED, seed)
    global_state.set_global_attribute(seed_generator.GLOBAL_SEED_GENERATOR, None)


def resolve_jit(task, flag):
    """`--jit`/`--no-jit` as given, else the task's default on this backend."""
    return flag if flag is not None else task.jit_default(keras.backend.backend())


def verbosity(args):
    """Keras's progress bar on a terminal, one line an epoch in CI or a log."""
    if getattr(args, "quiet", False):
        return 0
    return 2 if os.environ.get("CI") or not sys.stdout.isatty() else 1


# -- names and folders -----------------------------------------------------------------------
def default_name(task, args):
    """The task's base name (`Task.base_name`) with its built-in data; `<base>-<stem>`
    with a user's file or folder."""
    base, source = task.base_name(args), task.data_source(args)
    if "path" not in source:
        return base
    stem = os.path.splitext(os.path.basename(os.path.normpath(source["path"])))[0]
    stem = "".join(c if c.isalnum() or c in "._-" else "-" for c in stem).strip(".-")
    return f"{base}-{stem}" if stem else base


def same_data(a, b):
    """Whether two `RunMeta.data` records name the same data (built-in, or one path)."""
    return a.get("source") == b.get("source") and a.get("path") == b.get("path")


def check_publishing(task, args, name, data):
    """Refuses to publish over another dataset's model unless `--name` asked for it."""
    if args.no_export or args.name:
        return
    latest = latest_version(os.path.join(args.output_dir, name))
    if latest is None:
        return
    path = os.path.join(latest, "assets.extra", META_FILE)
    try:
        published = RunMeta.load(path).data
    except (OSError, ValueError, TypeError):
        published = None
    if published is not None and same_data(published, data):
        return
    shown = published.get("path") or published.get("source") if published else "unknown data"
    raise UsageError(
        f"{latest} was trained on {shown}, this run on "
        f"{data.get('path') or data.get('source')}; give the model its own --name, or "
        f"--name {name} to publish over it")


def latest_version(model_root):
    """The largest numeric version folder under `model_root`, or `None`."""
    if not os.path.isdir(model_root):
        return None
    versions = [int(v) for v in os.listdir(model_root) if v.isdigit()]
    return os.path.join(model_root, str(max(versions))) if versions else None


def save_run(run_dir, model, meta, task, data, **records):
    """The run folder: `model.keras`, `meta.json`, the task's assets and each record
    (a learning curve, a fit history) as `<name>.json`."""
    model.save(os.path.join(run_dir, MODEL_FILE))
    meta.save(os.path.join(run_dir, META_FILE))
    task.save_assets(run_dir, data, meta)
    for name, record in records.items():
        with open(os.path.join(run_dir, f"{name}.json"), "w") as f:
            json.dump(record, f, indent=1)


def load_run(run_dir):
    """`(meta, model, assets, task)` of a run folder or an export's `assets.extra/`."""
    meta = RunMeta.load(os.path.join(run_dir, META_FILE))
    task = tasks.get(meta.task)
    model = keras.saving.load_model(os.path.join(run_dir, MODEL_FILE), compile=False,
                                    safe_mode=True)
    return meta, model, task.load_assets(run_dir, meta), task


# -- callbacks -------------------------------------------------------------------------------
def tensorboard_callbacks(run_dir, tensorboard=None, folder="logs"):
    """TensorBoard logs in `run_dir/folder` if asked (by default on the TF backend)."""
    if tensorboard is None:
        tensorboard = keras.backend.backend() == "tensorflow"
    return [keras.callbacks.TensorBoard(os.path.join(run_dir, folder))] if tensorboard else []


def place(task, args):
    """The run's `distribution.Placement` (`--distribute`), set up for this process."""
    return distribution.place(getattr(args, "distribute", "none"), args.batch_size, task.name,
                              task.uses_fit)


def fit_in_process(task, args, callbacks=(), placement=None, run_dir=None):
    """Devices, seed, precision, the task's data and model, and training, with no run
    folder (what `train` does before saving, and what a benchmark needs): returns
    `(data, model, record)`, `record` as `Task.fit`'s with the seconds
    `fit` took, whether the step was compiled and where it ran (`distribution`).

    With `--restarts N` it trains up to N models on the same data, restart k from
    seed `seed + RESTART_SEED_STEP · k`, and keeps the one `task.restart_rank`
    puts first: for the `model.fit` tasks the lowest training error, as Sukhbaatar
    et al. (2015, §4.2) "picked the one with the lowest training error" of their
    runs; for the bit tasks the fewest validation bit errors. It stops early once
    `task.restarts_settled` says a run is good enough. The held-out splits play no
    part in the choice, so their figures stay unbiased. `record["restarts"]` lists
    every restart's seed and rank figures.

    With `run_dir`, each restart keeps a backup to resume from (`backup` for the
    first, `backup-2`, `backup-3`, … after it) and TensorBoard logs (`logs`,
    `logs-2`, …) when `args.tensorboard` asks for them. An interrupted run resumes
    the restart it was in; the restarts before it, whose backups were deleted
    when they finished, train again from their seeds.
    """
    options.require(args, "fit_in_process")
    placement = placement or place(task, args)
    if args.mixed_precision:
        keras.config.set_dtype_policy("mixed_float16")
    set_seed(args.seed)
    data = task.prepare(args)
    jit = resolve_jit(task, args.jit)
    if jit and placement.tf_strategy is not None and placement.devices > 1:
        # XLA cannot reach a replica's random-seed state on another device.
        print("MirroredStrategy over several devices: the step runs without XLA (--no-jit)")
        jit = False
    restarts = getattr(args, "restarts", 1)
    kept, tried = None, []
    for k in range(restarts):
        run_args, run_data = args, data
        if restarts > 1:
            # The task may write a run's state into its data (memn2n's schedule), and
            # builds from `args.seed`: each restart gets its own of both.
            run_args = dataclasses.replace(args, seed=args.seed + RESTART_SEED_STEP * k)
            run_data = copy.copy(data)
            print(f"restart {k + 1} of {restarts} (seed {run_args.seed})", flush=True)
            if k:
                set_seed(run_args.seed)
        resumed = None
        run_callbacks = list(callbacks)
        if run_dir is not None:
            suffix = f"-{k + 1}" if k else ""
            resumed = ResumeReport(os.path.join(run_dir, "backup" + suffix))
            run_callbacks += [resumed, *tensorboard_callbacks(run_dir, args.tensorboard,
                                                              "logs" + suffix)]
        with placement.scope():
            model = task.build_model(run_args, run_data, jit)
            run_callbacks += task.callbacks(model, run_data, run_args)
            start = time.time()
            try:
                record = task.fit(model, run_data, run_args, run_callbacks, verbosity(args))
            except KeyboardInterrupt as stop:
                # `train` names the backup this restart resumes from.
                stop.backup_dir = resumed.backup_dir if resumed is not None else None
                raise
        record["seconds"] = time.time() - start
        kept_epochs = [c.kept_epoch for c in run_callbacks
                       if getattr(c, "kept_epoch", None) is not None]
        if kept_epochs:  # a callback restored an earlier epoch's weights
            record["kept_epoch"] = kept_epochs[-1]
        if resumed is not None and resumed.initial_epoch:
            record["resumed_from_epoch"] = resumed.initial_epoch + 1
        if restarts == 1:
            kept = (None, run_data, model, record)
            break
        rank = task.restart_rank(record)
        tried.append({"seed": run_args.seed, **rank, "seconds": round(record["seconds"], 1)})
        if kept is None or tuple(rank.values()) < kept[0]:
            kept = (tuple(rank.values()), run_data, model, record | {"kept_seed": run_args.seed})
        del model  # only the kept model stays in memory
        if k + 1 < restarts and task.restarts_settled(record):
            print(f"restart {k + 1} is good enough: no more restarts", flush=True)
            break
    _, data, model, record = kept
    distribution.gather(model)
    record.update(jit_compile=bool(jit))
    if restarts > 1:
        record.update(restarts=tried, seconds=sum(t["seconds"] for t in tried))
        ranked_by = next(name for name in tried[0] if name != "seed")  # restart_rank's first
        print(f"restarts, {ranked_by.replace('_', ' ')}: " + ", ".join(
            f"{t[ranked_by]:.4f} (seed {t['seed']})" for t in tried)
            + f"; kept seed {record['kept_seed']}", flush=True)
    if placement.strategy != "none":
        record["distribution"] = placement.record()
    return data, model, record


# -- the commands ----------------------------------------------------------------------------
def train(task, args):
    """`keras-attn train TASK`: returns a dict of what ran, the figures and the export.
    `args` are the task's frozen options (`cli.task_options`)."""
    options.require(args, "train")
    data_source = task.data_source(args)
    name = args.name or default_name(task, args)
    run_dir = args.work_dir or os.path.join(RUNS_ROOT, name)
    placement = place(task, args)
    if not placement.is_chief:
        # Every process computes the same (the collectives need them all); only
        # process 0 keeps what it writes.
        run_dir = tempfile.mkdtemp()
        args = dataclasses.replace(args, no_export=True, tensorboard=False)
    else:
        check_publishing(task, args, name, data_source)
        print(f"model {name!r}: run folder {run_dir}"
              + ("" if args.no_export else f", export {os.path.join(args.output_dir, name)}"),
              flush=True)
    os.makedirs(run_dir, exist_ok=True)
    try:
        # CtrlC first: its interrupt must come before any other callback's epoch end.
        data, model, record = fit_in_process(task, args, [CtrlC()], placement,
                                             run_dir=run_dir)
    except KeyboardInterrupt as stop:
        backup = getattr(stop, "backup_dir", None) or os.path.join(run_dir, "backup")
        print(f"\ninterrupted: run the same command again to resume from the backup in "
              f"{backup}", file=sys.stderr)
        raise SystemExit(130) from None
    jit, seconds = record.pop("jit_compile"), record.pop("seconds")
    records = record.pop("records", {})
    training = {"backend": keras.backend.backend(), "seed": args.seed,
                "batch_size": args.batch_size, "jit_compile": bool(jit),
                "mixed_precision": bool(args.mixed_precision), "seconds": seconds, **record}
    meta = RunMeta(task=task.name, name=name, config=model_config(model),
                   settings=task.settings(args, data, model), data=data_source,
                   training=training)
    save_run(run_dir, model, meta, task, data, **records)
    print(trained_line(training))
    assets = task.load_assets(run_dir, meta)
    results = {"training": training, "figures": task.evaluate(model, meta, assets, data=data)}
    with open(os.path.join(run_dir, "figures.json"), "w") as f:
        json.dump(results["figures"], f, indent=1)
    results["export"] = None if args.no_export else export_and_report(
        task.name, run_dir, args.output_dir)
    task.show_samples(model, meta, assets, data)
    if not placement.is_chief:
        shutil.rmtree(run_dir, ignore_errors=True)
    return results


def model_config(model):
    """`RunMeta.config`: a `ConfiguredModel`'s constructor arguments (`model.arguments`,
    as its `get_config()` writes them); `{}` for another model (a plug-in's)."""
    if not isinstance(model, ConfiguredModel):
        return {}
    config = model.get_config()
    # A preprocessor argument is saved with the model, its vocabularies in the run's assets.
    return {key: config[key] for key, value in model.arguments.items()
            if not isinstance(value, keras.layers.Layer)}


def trained_line(training):
    seconds = f"{training['seconds']:.0f} s"
    if "epochs" in training:
        epochs = training["epochs"]
        what = f"{epochs} epoch" + ("" if epochs == 1 else "s")
        if "resumed_from_epoch" in training:
            what += f" (resumed from epoch {training['resumed_from_epoch']})"
        return f"trained {what} in {seconds}"
    if "sequences" in training:
        return f"trained on {training['sequences']} sequences in {seconds}"
    return f"trained {training.get('steps')} steps in {seconds}"


def evaluate(task, args):
    """`keras-attn evaluate TASK --run-dir DIR`, `args` frozen as `cli.task_options`'s."""
    options.require(args, "evaluate")
    meta, model, assets, run_task = load_run(args.run_dir)
    if run_task.name != task.name:
        raise UsageError(f"evaluate {task.name}: {args.run_dir} holds a {run_task.name} run")
    return task.evaluate(model, meta, assets, args=args)


def export(run_dir, export_root):
    """Writes the run's SavedModel as the next version of `export_root/<name>/`
    (TensorFlow backend), with the run's model, meta and the task's assets in
    `assets.extra/`; returns the version folder."""
    from keras_attn.training import export as export_lib

    meta, model, assets, task = load_run(run_dir)
    archive = task.export_archive(model, meta, assets)
    files = [os.path.join(run_dir, n) for n in (MODEL_FILE, META_FILE, *task.assets)]
    return export_lib.write_version(os.path.join(export_root, meta.name), archive, files)


def export_in_tensorflow(task_name, run_dir, export_root):
    """Exports on the TensorFlow backend: here if active, else in a subprocess that
    answers in JSON. Returns the version folder, or `None` without TensorFlow."""
    if keras.backend.backend() == "tensorflow":
        return export(run_dir, export_root)
    env = {**os.environ, "KERAS_BACKEND": "tensorflow"}
    command = [sys.executable, "-m", "keras_attn.training.cli", "export", task_name,
               "--run-dir", run_dir, "--output-dir", export_root, "--json"]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0 and "No module named 'tensorflow'" in result.stderr:
        return None
    if result.returncode != 0:
        raise RuntimeError(f"export failed:\n{result.stdout}\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])["export"]


def export_and_report(task_name, run_dir, export_root):
    """`export_in_tensorflow`, printing where the export went or, without
    TensorFlow, the command that exports the run later."""
    path = export_in_tensorflow(task_name, run_dir, export_root)
    print(f"exported to {path}" if path else
          "TensorFlow is not installed, so there is no SavedModel export; where it is, run: "
          f"keras-attn export {task_name} --run-dir {run_dir}")
    return path

