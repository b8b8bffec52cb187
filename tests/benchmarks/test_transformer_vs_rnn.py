"""The Transformer-vs-RNN benchmark: its clock and curve, on a tiny run (TensorFlow only)."""

import json
import os
import sys

import pytest

from tests.training.serving import TENSORFLOW_BACKEND_ONLY

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import transformer_vs_rnn  # noqa: E402

pytestmark = TENSORFLOW_BACKEND_ONLY


def test_seconds_to_reach_takes_the_first_evaluation_at_the_target():
    curve = [{"train_seconds": 1.0, "exact_match": 0.5},
             {"train_seconds": 2.0, "exact_match": 0.996},
             {"train_seconds": 3.0, "exact_match": 0.99}]
    assert transformer_vs_rnn.seconds_to_reach(curve, 0.995) == 2.0
    assert transformer_vs_rnn.seconds_to_reach(curve, 0.999) is None


def test_a_tiny_run_writes_a_curve_per_model(tmp_path):
    path = str(tmp_path / "result.json")
    transformer_vs_rnn.main(["--train-size", "256", "--eval-size", "8", "--eval-every", "2",
                             "--epochs", "1", "--transformer-flags=--model-dim 32",
                             "--seeds", "3,4", "--output", path])
    result = json.load(open(path))
    runs = result["runs"]
    assert [(r["model"], r["seed"]) for r in runs] == [
        ("rnn", 3), ("transformer", 3), ("rnn", 4), ("transformer", 4)
    ]
    assert runs[0]["flags"] == [] and runs[1]["flags"] == ["--model-dim", "32"]
    assert runs[0]["schedule"] == "constant" and runs[1]["schedule"] == "inverse-sqrt"
    assert set(result["median_seconds_to_target"]) == {"rnn", "transformer"}
    for run in runs:
        curve = run["curve"]
        assert [p["batches"] for p in curve] == [2, 4]  # 256 pairs / batch 64
        assert 0 < curve[0]["train_seconds"] < curve[1]["train_seconds"] <= run["train_seconds"]
        assert all(0.0 <= p["exact_match"] <= 1.0 for p in curve)
        assert run["tokens_per_second"] > 0 and run["parameters"] > 10_000


def test_median_seconds_to_target_counts_a_run_that_never_reached_it_as_slowest():
    runs = [{"model": "rnn", "seconds_to_target": t} for t in (3.0, None, 1.0)]
    runs += [{"model": "transformer", "seconds_to_target": t} for t in (None, None, 2.0)]
    runs += [{"model": "even", "seconds_to_target": t} for t in (4.0, 2.0)]
    assert transformer_vs_rnn.median_seconds_to_target(runs) == {
        "rnn": 3.0, "transformer": None, "even": 3.0
    }


def test_bad_arguments_are_refused():
    with pytest.raises(SystemExit):
        transformer_vs_rnn.main(["--models", "rnn,lstm"])
    with pytest.raises(SystemExit):
        transformer_vs_rnn.main(["--eval-every", "0"])
    with pytest.raises(SystemExit):
        transformer_vs_rnn.main(["--seeds", "0,one"])
