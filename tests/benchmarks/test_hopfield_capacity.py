"""The Hopfield capacity benchmark: its theory formulas, its capacity estimate, a small run."""

import json
import math
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import hopfield_capacity  # noqa: E402


def test_krotov_hopfield_capacity():
    # N^{n-1} / (2 (2n-3)!! ln N): (2n-3)!! is 1, 3 and 15 for n = 2, 3, 4.
    assert hopfield_capacity.krotov_hopfield_capacity(100, 2) == pytest.approx(100 / (2 * math.log(100)))
    assert hopfield_capacity.krotov_hopfield_capacity(100, 3) == pytest.approx(1e4 / (6 * math.log(100)))
    assert hopfield_capacity.krotov_hopfield_capacity(100, 4) == pytest.approx(1e6 / (30 * math.log(100)))


def test_crosstalk_flip_probability_tends_to_the_large_n_form():
    alpha = 0.2
    large = hopfield_capacity.crosstalk_flip_probability(10**6, int(alpha * 10**6))
    assert large == pytest.approx(0.5 * math.erfc(1 / math.sqrt(2 * alpha)), rel=1e-3)
    assert hopfield_capacity.crosstalk_flip_probability(100, 1) == 0.0


def test_crossing_interpolates_where_the_curve_falls_through_the_level():
    rows = [{"alpha": 0.1, "retrieved": 1.0}, {"alpha": 0.2, "retrieved": 0.8}, {"alpha": 0.3, "retrieved": 0.2}]
    assert hopfield_capacity.crossing(rows) == pytest.approx(0.25)
    assert hopfield_capacity.crossing(rows[:2]) is None


def test_a_small_run_recalls_below_capacity_and_fails_above(tmp_path):
    output = tmp_path / "hopfield.json"
    hopfield_capacity.main(
        ["--units", "64", "--alphas", "0.05,0.4", "--starts", "64", "--sweeps", "6",
         "--dense-units", "64", "--dense-patterns", "32", "--modern-dims", "12",
         "--modern-max-patterns", "64", "--output", str(output)]
    )
    result = json.loads(output.read_text())
    low, high = result["retrieval"]
    assert low["retrieved"] == 1.0 and high["retrieved"] < 0.5
    assert low["not_converged"] == 0
    flips = result["one_update_flips"]
    assert flips[0]["flipped_bits"] < flips[1]["flipped_bits"]
    assert abs(flips[1]["flipped_bits"] - flips[1]["theory"]) < 0.02
    dense = {row["memory"]: row for row in result["dense"]}
    # 32 patterns over 64 units: past the classic network's capacity, well inside x^3's.
    assert dense["x^2 (classic)"]["fixed_points"] < 0.5
    assert dense["x^3"]["recalled_from_noise"] == 1.0
    assert dense["exp"]["recalled_from_noise"] == 1.0
    assert result["summary"]["classic_capacity_by_units"]["64"] is not None
    modern = result["modern"]
    assert [row["patterns"] for row in modern] == [16, 32, 64]
    for row in modern:  # 64 probes each: within a few standard errors of (1 − F)^(M−1)
        assert abs(row["retrieved"] - row["theory"]) < 0.2, row


def test_nearest_pattern_success():
    # d = 16, k = 2: F = (1 + 16 + 120) / 2^16.
    near = 137 / 2**16
    success, half = hopfield_capacity.nearest_pattern_success(16, 2, 100)
    assert success == pytest.approx((1 - near) ** 99)
    assert half == pytest.approx(math.log(2) / near)
    assert hopfield_capacity.nearest_pattern_success(16, 2, 1)[0] == 1.0


def test_the_finite_size_fit_recovers_its_intercept():
    capacities = {str(n): 0.14 + 0.8 / math.sqrt(n) for n in (100, 400, 1600)}
    intercept, slope = hopfield_capacity.extrapolate_capacity(capacities)
    assert intercept == pytest.approx(0.14) and slope == pytest.approx(0.8)
    assert hopfield_capacity.extrapolate_capacity({"100": 0.2, "200": None}) is None
