"""Adding a model is one `Task` and one registry line: a toy task, registered here,
trains, evaluates, exports and predicts through the CLI, and `cli.py` names no task."""

import os
import re

import keras
import numpy as np
import pytest

from keras_attn.training import cli, tasks
from keras_attn.training.task import Task
from tests.training.serving import TENSORFLOW_BACKEND_ONLY


class DoublingTask(Task):
    """y = 2x + 1 from a one-unit `Dense`: the least a task needs."""

    name = "toy-doubling"
    summary = "toy: learn y = 2x + 1"
    batch_size = 16

    def add_arguments(self, parser):
        parser.add_argument("--epochs", type=int, default=40)

    def prepare(self, args):
        x = np.random.default_rng(args.seed).uniform(-1, 1, (256, 1)).astype("float32")
        return {"x": x, "y": 2 * x + 1}

    def build_model(self, args, data, jit_compile):
        model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, name="line")])
        model.compile(optimizer=keras.optimizers.Adam(0.1), loss="mse", jit_compile=jit_compile)
        return {"units": 1}, model

    def fit_arguments(self, model, data, args):
        return {"x": data["x"], "y": data["y"], "batch_size": args.batch_size,
                "epochs": args.epochs}

    def settings(self, args, data, config):
        return {"scale": 2.0}

    def evaluate(self, model, meta, assets, args=None, data=None):
        x = np.linspace(-1, 1, 11, dtype="float32")[:, None]
        error = float(np.abs(model.predict(x, verbose=0) - (2 * x + 1)).max())
        print(f"toy max error {error:.4f}")
        return {"max_error": error}

    def export_archive(self, model, meta, assets):
        import tensorflow as tf

        archive = keras.export.ExportArchive()
        archive.track(model)
        archive.add_endpoint("serving_default", lambda x: {"y": model(x)},
                             input_signature=[tf.TensorSpec([None, 1], tf.float32, name="x")])
        return archive

    def add_predict_arguments(self, parser):
        parser.add_argument("values", nargs="+", type=float)

    def predict(self, version_dir, meta, args):
        import tensorflow as tf

        serve = tf.saved_model.load(version_dir).signatures["serving_default"]
        y = serve(x=tf.constant([[v] for v in args.values], tf.float32))["y"].numpy()[:, 0]
        print(" ".join(f"{v:.2f}" for v in y))
        return y


@pytest.fixture
def toy_task():
    task = tasks.register(DoublingTask())
    yield task
    tasks.unregister(task.name)


@TENSORFLOW_BACKEND_ONLY
def test_a_task_registered_from_outside_runs_every_command(toy_task, tmp_path, capsys):
    run, exports = str(tmp_path / "run"), str(tmp_path / "saved_models")
    assert cli.main(["train", "toy-doubling", "--work-dir", run, "--output-dir", exports,
                     "--no-tensorboard", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "model 'toy-doubling'" in printed and "toy max error" in printed
    version = os.path.join(exports, "toy-doubling", "1")
    assert os.path.exists(os.path.join(version, "saved_model.pb"))
    assert cli.main(["evaluate", "toy-doubling", "--run-dir", run]) == 0
    assert float(capsys.readouterr().out.split()[-1]) < 0.05
    assert cli.main(["export", "toy-doubling", "--run-dir", run, "--output-dir", exports]) == 0
    assert os.path.exists(os.path.join(exports, "toy-doubling", "2", "saved_model.pb"))
    assert cli.main(["predict", os.path.join(exports, "toy-doubling"), "0", "1.5"]) == 0
    assert capsys.readouterr().out.split()[-2:] == ["1.00", "4.00"]


def test_the_cli_module_names_no_task():
    source = open(cli.__file__, encoding="utf-8").read()
    for name in tasks.names():
        assert not re.search(rf"\b{re.escape(name)}\b", source), name
    for flag in ("--beam-width", "--story", "--points", "--length", "--data-dir"):
        assert flag not in source, flag
