"""The command line becomes one typed, frozen options object at the edge; below it no
function takes argparse's namespace, and nothing changes a flag."""

import argparse
import ast
import dataclasses
import os

import keras
import numpy as np
import pytest

from keras_attn.training import cli, runner, tasks
from tests.training.toy_tasks import TrainOnlyTask, registered

TRAINING = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "training")
EDGE = {"cli.py", "options.py", "arguments.py"}  # where argparse's namespace may live


class SpyTask(TrainOnlyTask):
    """A line fit that records what every method taking the flags received."""

    name = "toy-options"
    summary = "toy: options"
    batch_size = 16

    def __init__(self):
        self.received = {}

    def _saw(self, method, args):
        self.received[method] = args

    def add_arguments(self, parser):
        parser.add_argument("--epochs", type=int, default=2)
        parser.add_argument("--width", type=int, help="default: twice --epochs")

    def resolve(self, options):
        self._saw("resolve", options)
        return options if options.width else dataclasses.replace(options, width=2 * options.epochs)

    def data_source(self, args):
        self._saw("data_source", args)
        return {"source": "built-in"}

    def prepare(self, args):
        self._saw("prepare", args)
        x = np.random.default_rng(args.seed).uniform(-1, 1, (64, 1)).astype("float32")
        return {"x": x, "y": 2 * x}

    def build_model(self, args, data, jit_compile):
        self._saw("build_model", args)
        model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(args.width),
                                  keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        return model

    def callbacks(self, model, data, args):
        self._saw("callbacks", args)
        return []

    def fit_arguments(self, model, data, args):
        self._saw("fit_arguments", args)
        return {"x": data["x"], "y": data["y"], "batch_size": args.batch_size,
                "epochs": args.epochs}

    def settings(self, args, data, model):
        self._saw("settings", args)
        return {}

    def evaluate(self, model, meta, assets, args=None, data=None):
        self._saw("evaluate", args)
        return {}


@pytest.fixture
def spy():
    with registered(SpyTask()) as task:
        yield task


def test_options_are_frozen_and_typed_from_the_parser():
    options = cli.task_options(["train", "memn2n", "--tasks", "13", "--seed", "3"])
    assert (options.tasks, options.seed, options.command, options.task) == ("13", 3, "train",
                                                                              "memn2n")
    types = {f.name: f.type for f in dataclasses.fields(options)}
    assert types["seed"] is int and types["batch_size"] is int
    assert types["data_dir"] == str | None and types["jit"] == bool | None
    assert types["quiet"] is bool and types["restarts"] == int | None  # None: resolve decides
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seed = 1
    assert dataclasses.replace(options, seed=1).seed == 1 and options.seed == 3


def test_the_translator_profile_is_resolved_once_at_the_edge():
    dates = cli.task_options(["train", "translator"])
    text = cli.task_options(["train", "translator", "--data", "pairs.tsv", "--epochs", "7"])
    assert dates.level == "char" and dates.epochs == 3
    assert text.level == "subword" and text.max_vocab == "auto" and text.epochs == 7
    task = tasks.get("translator")
    assert task.resolve(text) == text  # nothing left to fill in


def test_a_small_corpus_trains_with_the_small_corpus_levers(tmp_path):
    from keras_attn.training.tasks.translator import flags

    small, large = tmp_path / "small.tsv", tmp_path / "large.tsv"
    small.write_text("uno\tone\n" * 500 + "\n\n", encoding="utf-8")
    large.write_text("uno\tone\n" * flags.SMALL_CORPUS_LINES, encoding="utf-8")
    options = cli.task_options(["train", "translator", "--data", str(small)])
    assert (options.dropout, options.word_dropout, options.label_smoothing) == (0.3, 0.1, 0.1)
    assert options.shared_vocabulary is True and options.tie_embeddings is True
    assert options.subword_dropout == 0.1
    assert options.level == "subword" and options.patience == 3  # the rest: the text profile
    assert flags.profile_line(options) == (
        "profile: small-text (500 lines, fewer than 16,000): the text defaults with subword "
        "dropout 0.1, dropout 0.3, word dropout 0.1, label smoothing 0.1, a shared "
        "vocabulary, tied embeddings (RNN) (flags given win)")
    # Subword dropout cuts subwords only: at another level the profile leaves it off.
    words = cli.task_options(["train", "translator", "--data", str(small), "--level", "word"])
    assert words.subword_dropout == 0.0
    given = cli.task_options(["train", "translator", "--data", str(small), "--dropout", "0",
                              "--no-tie-embeddings"])
    assert given.dropout == 0.0 and given.word_dropout == 0.1
    assert given.tie_embeddings is False and given.shared_vocabulary is True
    # Tied embeddings are the RNN's: the Transformer's small-corpus profile leaves them off.
    transformer = cli.task_options(["train", "translator", "--data", str(small), "--model",
                                    "transformer"])
    assert transformer.tie_embeddings is False and transformer.shared_vocabulary is True
    options = cli.task_options(["train", "translator", "--data", str(large)])
    assert (options.dropout, options.word_dropout, options.label_smoothing) == (0.0, 0.0, 0.0)
    assert options.shared_vocabulary is False and options.tie_embeddings is False
    assert flags.profile_line(options) == "profile: text (16,000 lines)"


def test_every_task_method_receives_the_frozen_options(spy, tmp_path):
    assert cli.main(["train", "toy-options", "--work-dir", str(tmp_path / "run"),
                     "--no-export", "--no-tensorboard", "--quiet"]) == 0
    assert cli.main(["evaluate", "toy-options", "--run-dir", str(tmp_path / "run")]) == 0
    expected = {"resolve", "data_source", "prepare", "build_model", "callbacks",
                "fit_arguments", "settings", "evaluate"}
    assert set(spy.received) == expected
    for method, received in spy.received.items():
        assert dataclasses.is_dataclass(received), method
        assert not isinstance(received, argparse.Namespace), method
        assert type(received).__dataclass_params__.frozen, method
    assert spy.received["build_model"].width == 4  # resolved from --epochs 2, once


@pytest.mark.parametrize("entry", ["train", "fit_in_process", "evaluate"])
def test_the_runner_refuses_a_namespace(spy, entry):
    namespace = cli.build_parser().parse_args(["train", "toy-options"])
    with pytest.raises(TypeError, match=f"{entry} takes a task's frozen options"):
        getattr(runner, entry)(spy, namespace)


def _modules():
    for folder, _, files in os.walk(TRAINING):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, TRAINING), ast.parse(open(path, encoding="utf-8").read())


def test_below_the_edge_no_code_parses_or_changes_flags():
    found = []
    for path, tree in _modules():
        if os.path.basename(path) in EDGE:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in (
                    "parse_args", "parse_known_args"):
                found.append(f"{path}:{node.lineno} parses a command line")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id == "args":
                found.append(f"{path}:{node.lineno} sets a flag")
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AugAssign) else [])
            for target in targets:
                for element in ast.walk(target):
                    if isinstance(element, ast.Attribute) and isinstance(element.value, ast.Name) \
                            and element.value.id == "args":
                        found.append(f"{path}:{node.lineno} sets args.{element.attr}")
            if isinstance(node, ast.Attribute) and node.attr == "Namespace":
                found.append(f"{path}:{node.lineno} names argparse.Namespace")
    assert found == []
