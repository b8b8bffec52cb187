"""The tasks of the hard-attention, segment-attention and Hopfield MIL benchmarks,
and tiny runs of the last two."""

import json
import os
import sys

import keras
import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import hard_attention  # noqa: E402
import hopfield_mil  # noqa: E402
import segment_attention  # noqa: E402


def test_marked_items_target_is_the_value_of_the_one_marked_item():
    items, targets = hard_attention.marked_items(np.random.default_rng(0), 50, 7, 5)
    assert items.shape == (50, 7, 6)
    np.testing.assert_array_equal(items[..., 5].sum(1), 1)  # one marker each
    np.testing.assert_array_equal(items[..., :5].sum(-1), 1)  # one value per item
    marked = items[..., 5].argmax(1)
    np.testing.assert_array_equal(items[np.arange(50), marked, :5].argmax(-1), targets)


def test_noisy_span_target_is_the_sum_inside_one_contiguous_span():
    rng = np.random.default_rng(0)
    tokens, targets = segment_attention.noisy_spans(rng, 200, 9, noise=0.0)
    inside = tokens[..., 1] > 0.5
    for row in inside:  # one contiguous run
        edges = np.flatnonzero(np.diff(np.r_[0, row.astype(int), 0]))
        assert len(edges) == 2
    np.testing.assert_allclose((tokens[..., 0] * inside).sum(1), targets, rtol=1e-6)


def test_bit_pattern_bags_hide_a_signal_in_positives_only():
    data, targets = hopfield_mil.bit_pattern_bags(64, 6, 3, 4, seed=1)
    assert data.shape == (64, 6, 4) and targets.sum() == 32 and np.all(targets[:32] == 1)
    assert np.all(data.sum(-1) > 0)  # no all-zero instance
    patterns = {tuple(p) for bag in data[32:] for p in bag}
    counts = [sum(tuple(p) not in patterns for p in bag) for bag in data[:32]]
    assert all(c >= 1 for c in counts)  # each positive holds an instance no negative has


@pytest.mark.parametrize("module, argv, key", [
    (segment_attention, ["--epochs", "1", "--seeds", "1", "--train-size", "256",
                         "--test-size", "64"], "models"),
    (hopfield_mil, ["--epochs", "1", "--seeds", "1", "--bags", "64", "--held-out", "16",
                    "--bits", "4", "--signals", "3", "--instances", "6"], "models"),
])
def test_a_tiny_run_writes_every_model(tmp_path, module, argv, key):
    output = tmp_path / "result.json"
    module.main([*argv, "--output", str(output)])
    result = json.loads(output.read_text())
    assert result["backend"] == keras.backend.backend()
    assert set(result[key]) == set(module.MODELS)
