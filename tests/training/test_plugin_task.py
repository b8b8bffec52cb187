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
        return model

    def fit_arguments(self, model, data, args):
        return {"x": data["x"], "y": data["y"], "batch_size": args.batch_size,
                "epochs": args.epochs}

    def settings(self, args, data, model):
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


def test_a_new_folder_under_tasks_is_a_built_in_task_with_no_edit_elsewhere(tmp_path):
    """The toy task above, as a folder in a copy of the source tree: the CLI lists and
    trains it, and the docs' hook gives its modules API pages, with nothing else edited."""
    import inspect
    import shutil
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("keras_attn", "models", "training", "docs/_hooks"):
        shutil.copytree(os.path.join(root, folder), source / folder, ignore=ignore)
    toy = source / "training" / "tasks" / "toy"
    toy.mkdir()
    (toy / "task.py").write_text(
        "import keras\nimport numpy as np\n\nfrom keras_attn.training.task import Task\n\n\n"
        + inspect.getsource(DoublingTask), encoding="utf-8")
    (toy / "__init__.py").write_text(
        '"""A toy task."""\n\nfrom keras_attn.training.tasks.toy.task import DoublingTask\n\n'
        "TASKS = (DoublingTask(),)\n", encoding="utf-8")
    # The installed layout (setup.py): models/ and training/ inside keras_attn/.
    installed = tmp_path / "installed"
    shutil.copytree(source / "keras_attn", installed / "keras_attn", ignore=ignore)
    for folder in ("models", "training"):
        os.symlink(source / folder, installed / "keras_attn" / folder)
    script = ("import sys; from keras_attn.training import cli, tasks; "
              "print(sorted(tasks.names())); "
              "sys.exit(cli.main(['train', 'toy-doubling', '--epochs', '2', '--no-export', "
              f"'--no-tensorboard', '--quiet', '--work-dir', {str(tmp_path / 'run')!r}]))")
    env = dict(os.environ, PYTHONPATH=str(installed), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'toy-doubling'" in done.stdout.splitlines()[0]
    assert "toy max error" in done.stdout
    assert os.path.exists(tmp_path / "run" / "model.keras")
    hook = subprocess.run(
        [sys.executable, "-c", "import api_pages; print([n for s in api_pages.api_nav() "
         "for e in s.values() for x in e for n in x])"],
        capture_output=True, text=True, cwd=source / "docs" / "_hooks")
    assert "keras_attn.training.tasks.toy.task" in hook.stdout, hook.stderr
