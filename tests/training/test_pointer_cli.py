"""`keras-attn train pointer-*`: training through the CLI, the run directory and its
figures (any backend, no export)."""

import json
import os

import pytest

from keras_attn.training import cli
from keras_attn.training.errors import UsageError
from keras_attn.training.tasks.pointer import task as pointer

SMALL = ["--units", "16", "--encoder-layers", "1", "--heads", "2", "--train-instances", "64",
         "--validation-instances", "32", "--epochs", "1", "--batch-size", "32",
         "--test-instances", "20", "--no-export", "--quiet"]


@pytest.mark.parametrize("name", sorted(pointer.SPECS))
def test_trains_saves_its_run_and_evaluates_the_same(name, tmp_path, capsys):
    work = str(tmp_path / "work")
    cli.main(["train", name, *SMALL, "--max-points", "7", "--test-sizes", "5,6",
              "--beam-width", "2", "--work-dir", work])
    printed = capsys.readouterr().out
    meta = json.load(open(os.path.join(work, "meta.json")))
    settings, figures = meta["settings"], json.load(open(os.path.join(work, "figures.json")))
    assert meta["task"] == name and settings["train_sizes"] == [pointer.SPECS[name].sizes[0], 7]
    assert settings["validation_instances"] == 32
    assert len(json.load(open(os.path.join(work, "history.json")))["val_loss"]) == 1
    assert set(figures) == {"N=5", "N=6"}
    for by_decoder in figures.values():
        assert by_decoder["greedy"]["valid"] == 1.0  # every decoded answer is well formed
        assert by_decoder["beam 2"]["valid"] == 1.0
        assert by_decoder["greedy"]["n"] == 20
    assert os.path.exists(os.path.join(work, "model.keras"))
    assert "loss" in json.load(open(os.path.join(work, "history.json")))
    cli.main(["evaluate", name, "--run-dir", work])
    evaluated = capsys.readouterr().out.splitlines()[1:]
    assert evaluated == [line for line in printed.splitlines() if line.startswith("  N=")]


@pytest.mark.parametrize("flags, message", [
    (["--min-points", "2"], "3 ≤ --min-points ≤ --max-points"),
    (["--max-points", "200"], "≤ --supported-points"),
    (["--test-sizes", "5,x"], "numbers separated by commas"),
])
def test_bad_training_flags_stop_with_a_message(flags, message, tmp_path):
    with pytest.raises(UsageError, match=message):
        cli.main(["train", "pointer-sort", *SMALL, *flags, "--work-dir", str(tmp_path)])


def test_tsp_refuses_sizes_beyond_exact_tours(tmp_path):
    with pytest.raises(UsageError, match="--max-points ≤ 12"):
        cli.main(["train", "pointer-tsp", *SMALL, "--max-points", "20",
                  "--work-dir", str(tmp_path)])
    with pytest.raises(UsageError, match="--test-sizes ≤ 12"):
        cli.main(["train", "pointer-tsp", *SMALL, "--test-sizes", "20",
                  "--work-dir", str(tmp_path)])
