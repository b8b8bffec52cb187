"""Capacity curves of `DenseAssociativeMemory`: the classic Hopfield network and dense memory.

Three measurements, each against the theory it tests, for random ±1 patterns:

1. **Classic network, one update** (`degree=2`, one synchronous sweep from a
   stored pattern): the fraction of bits that flip. With Hebbian weights and `P`
   patterns over `N` units (zero diagonal), a bit's local field is its signal
   `(N−1)/N` plus a crosstalk close to Gaussian with variance `(P−1)(N−1)/N²`,
   so it flips with probability `Φ(−√((N−1)/(P−1)))`, which is `Φ(−1/√α)`,
   `α = P/N`, for large `N` (Hertz, Krogh & Palmer 1991, §2.2).
2. **Classic network, retrieval** (asynchronous updates until nothing changes,
   from a stored pattern): the final overlap `m = ξ·σ/N`. Below the capacity
   `α_c ≈ 0.138` (Amit, Gutfreund & Sompolinsky 1985) a retrieval state with
   `m ≈ 0.97` lies next to each pattern; above it recall collapses to a spurious
   state of small overlap. The measured capacity is where half of the stored
   patterns still end at `m ≥ 0.9`; at finite `N` it lies above 0.138 and
   approaches it as `N` grows. A fit of `α_c(N) = α_∞ + c/√N` over the sizes
   run (an assumed finite-size form) extrapolates it to `N → ∞`.
3. **Dense associative memory** (`F(x) = x^n`, Krotov & Hopfield 2016; and
   `F(x) = exp(x)`, Demircigil et al. 2017), `N = 100`: the fraction of stored
   patterns that are exact fixed points, and exact recall from 10 % flipped
   bits, as the number of patterns grows past `N`. Krotov & Hopfield's
   error-free capacity is `N^{n−1} / (2 (2n−3)!! ln N)`: 362 patterns for
   `n = 3` and `N = 100` (and 11 for the classic `n = 2`).
4. **Modern Hopfield network** (`ModernHopfield`, Ramsauer et al. 2020): one
   update `ξ ← Yᵀ softmax(β Y ξ)` from a stored ±1 pattern with exactly `k`
   bits flipped, exact retrieval meaning `sign(ξ_new)` is the pattern. With a
   large `β` the update picks the stored pattern nearest the probe, so it fails
   when another of the `M − 1` random patterns is as near: it succeeds with
   probability `(1 − F)^{M−1}`, `F = Σ_{i≤k} C(d, i) / 2^d`. Half the probes
   are retrieved at `M ≈ ln 2 / F`, which grows exponentially in `d`.

Any backend; each call is compiled (`jit_compile=True`). No timing: the figures
are deterministic for a seed.

    python benchmarks/hopfield_capacity.py          # prints tables, writes JSON
"""

import argparse
import itertools
import logging
import math
import os
import sys

import keras
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_io import default_path, machine, write_results  # noqa: E402

from keras_attn.memory import DenseAssociativeMemory, ModernHopfield  # noqa: E402

AGS_CAPACITY = 0.138
RETRIEVED_OVERLAP = 0.9


def compiled_memory(**kwargs):
    """`DenseAssociativeMemory(**kwargs)` as a jit-compiled `(probe, patterns) → state`."""
    model = _Recall(DenseAssociativeMemory(**kwargs))
    model.compile(jit_compile=True)
    return lambda probe, patterns: keras.ops.convert_to_numpy(
        model.predict_on_batch([probe, patterns])
    )


class _Recall(keras.Model):
    """A model around the layer, for Keras's compiled `predict_on_batch` on any backend."""

    def __init__(self, memory):
        super().__init__(name="recall")  # TF refuses a scope named `__recall`
        self.memory = memory

    def call(self, inputs):
        return self.memory(inputs[0], inputs[1])


def random_patterns(rng, count, units):
    return np.where(rng.random((count, units)) < 0.5, -1.0, 1.0).astype("float32")


def flip(rng, states, fraction):
    return (states * np.where(rng.random(states.shape) < fraction, -1.0, 1.0)).astype("float32")


def crosstalk_flip_probability(units, stored):
    """`Φ(−√((N−1)/(P−1)))`: a bit's flip probability under Gaussian crosstalk."""
    if stored < 2:
        return 0.0
    return 0.5 * math.erfc(math.sqrt((units - 1) / (stored - 1)) / math.sqrt(2.0))


def one_update_flips(stored_counts, units, starts, rng):
    """Part 1: the fraction of bits flipped by one synchronous update of a stored pattern."""
    recall = compiled_memory(update="synchronous", sweeps=1)
    rows = []
    for stored in stored_counts:
        flipped, bits = 0, 0
        while bits < starts * units:
            patterns = random_patterns(rng, stored, units)
            state = recall(patterns, patterns)
            flipped += int(np.sum(state != patterns))
            bits += patterns.size
        rows.append(
            {
                "units": units,
                "patterns": stored,
                "alpha": stored / units,
                "flipped_bits": flipped / bits,
                "theory": crosstalk_flip_probability(units, stored),
            }
        )
    return rows


def retrieval(alphas, units, starts, sweeps, rng):
    """Part 2: final overlaps after asynchronous recall from each stored pattern."""
    recall = compiled_memory(sweeps=sweeps)
    settle = compiled_memory(sweeps=1)
    rows = []
    for alpha in alphas:
        stored = max(1, round(alpha * units))
        overlaps, unsettled = [], 0
        while len(overlaps) < starts:
            patterns = random_patterns(rng, stored, units)
            final = recall(patterns, patterns)
            unsettled += int(np.sum(np.any(settle(final, patterns) != final, axis=-1)))
            overlaps.extend(np.mean(final * patterns, axis=-1).tolist())
        overlaps = np.asarray(overlaps)
        rows.append(
            {
                "units": units,
                "patterns": stored,
                "alpha": stored / units,
                "starts": int(overlaps.size),
                "mean_overlap": float(np.mean(overlaps)),
                "retrieved": float(np.mean(overlaps >= RETRIEVED_OVERLAP)),
                "bit_errors_when_retrieved": float(
                    np.mean((1.0 - overlaps[overlaps >= RETRIEVED_OVERLAP]) / 2.0)
                )
                if np.any(overlaps >= RETRIEVED_OVERLAP)
                else None,
                # Starts not at a fixed point after `sweeps` sweeps (0 when converged).
                "not_converged": unsettled,
            }
        )
    return rows


def crossing(rows, key="retrieved", level=0.5):
    """The α at which `key` falls through `level` (linear between grid points)."""
    for before, after in itertools.pairwise(rows):
        if before[key] >= level > after[key]:
            t = (before[key] - level) / (before[key] - after[key])
            return before["alpha"] + t * (after["alpha"] - before["alpha"])
    return None


def extrapolate_capacity(capacities):
    """`(α_∞, c)` of the least-squares fit `α_c(N) = α_∞ + c/√N`, or None below 2 sizes."""
    known = {int(n): c for n, c in capacities.items() if c is not None}
    if len(known) < 2:
        return None
    inverse_root = [1.0 / math.sqrt(n) for n in known]
    slope, intercept = np.polyfit(inverse_root, list(known.values()), 1)
    return float(intercept), float(slope)


def krotov_hopfield_capacity(units, degree):
    double_factorial = math.prod(range(2 * degree - 3, 0, -2))
    return units ** (degree - 1) / (2 * double_factorial * math.log(units))


def dense_memory(kinds, stored_counts, units, starts, noise, rng):
    """Part 3: exact fixed points and exact recall from `noise` flipped bits."""
    rows = []
    for label, kwargs in kinds:
        check = compiled_memory(update="synchronous", sweeps=1, **kwargs)
        recall = compiled_memory(sweeps=4, **kwargs)
        for stored in stored_counts:
            patterns = random_patterns(rng, stored, units)
            chosen = patterns[rng.permutation(stored)[: min(starts, stored)]]
            fixed = np.all(check(chosen, patterns) == chosen, axis=-1)
            recalled = np.all(recall(flip(rng, chosen, noise), patterns) == chosen, axis=-1)
            rows.append(
                {
                    "memory": label,
                    "units": units,
                    "patterns": stored,
                    "starts": int(chosen.shape[0]),
                    "fixed_points": float(np.mean(fixed)),
                    "recalled_from_noise": float(np.mean(recalled)),
                }
            )
    return rows


def nearest_pattern_success(dim, flipped, stored):
    """`(1 − F)^{M−1}`: no other random pattern within `flipped` bits of the probe."""
    near = sum(math.comb(dim, i) for i in range(flipped + 1)) / 2.0**dim
    return (1.0 - near) ** (stored - 1), math.log(2.0) / near


def modern_hopfield(dims, flip_fraction, beta, starts, max_patterns, rng):
    """Part 4: one-update exact retrieval against the nearest-pattern prediction."""
    layer = ModernHopfield(beta=beta)
    rows = []
    for dim in dims:
        flipped = round(flip_fraction * dim)
        _, half = nearest_pattern_success(dim, flipped, 2)
        stored = 16
        while stored <= min(max_patterns, 8 * half):
            patterns = random_patterns(rng, stored, dim)
            chosen = rng.integers(0, stored, starts)
            # Exactly `flipped` bits of each probe: the first of a random order.
            bits = rng.random((starts, dim)).argsort(axis=1)[:, :flipped]
            signs = np.ones((starts, dim), "float32")
            np.put_along_axis(signs, bits, -1.0, axis=1)
            probes = patterns[chosen] * signs
            new = keras.ops.convert_to_numpy(layer(probes[None], patterns[None]))[0]
            exact = np.all(np.sign(new) == patterns[chosen], axis=-1)
            rows.append(
                {
                    "dim": dim,
                    "flipped_bits": flipped,
                    "patterns": stored,
                    "retrieved": float(np.mean(exact)),
                    "theory": nearest_pattern_success(dim, flipped, stored)[0],
                    "half_retrieved_theory": half,
                }
            )
            stored *= 2
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", default="100,200,400", help="N of the classic network")
    parser.add_argument("--alphas", default="0.05,0.08,0.1,0.12,0.14,0.16,0.18,0.2,0.25,0.3")
    parser.add_argument("--starts", type=int, default=400, help="recalls per grid point")
    parser.add_argument("--sweeps", type=int, default=60, help="asynchronous sweeps per recall")
    parser.add_argument("--dense-units", type=int, default=100)
    parser.add_argument("--dense-patterns", default="50,100,200,400,800,1600")
    parser.add_argument("--noise", type=float, default=0.1, help="flipped-bit fraction")
    parser.add_argument("--modern-dims", default="16,24,32", help="pattern sizes d of part 4")
    parser.add_argument("--modern-flip", type=float, default=0.125, help="part 4's flipped fraction")
    parser.add_argument("--modern-beta", type=float, default=8.0)
    parser.add_argument("--modern-max-patterns", type=int, default=2**17)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=default_path("hopfield_capacity"))
    args = parser.parse_args(argv)
    try:
        units = [int(x) for x in args.units.split(",")]
        alphas = [float(x) for x in args.alphas.split(",")]
        dense_patterns = [int(x) for x in args.dense_patterns.split(",")]
        modern_dims = [int(x) for x in args.modern_dims.split(",")]
    except ValueError as error:
        parser.error(f"--units, --alphas, --dense-patterns and --modern-dims take comma-separated numbers ({error})")
    rng = np.random.default_rng(args.seed)
    # Each grid point has its own shapes, so TensorFlow's retracing warning is expected.
    logging.getLogger("tensorflow").setLevel(logging.ERROR)

    print("1. Classic network: bits flipped by one update of a stored pattern")
    print(f"{'N':>5}{'P':>6}{'α':>7}{'measured':>10}{'Gaussian':>10}")
    flips = []
    for n in units:
        for row in one_update_flips([max(1, round(a * n)) for a in alphas], n, args.starts, rng):
            flips.append(row)
            print(
                f"{n:>5}{row['patterns']:>6}{row['alpha']:>7.3f}"
                f"{row['flipped_bits']:>10.4f}{row['theory']:>10.4f}"
            )

    print(f"\n2. Classic network: recall from a stored pattern ({args.sweeps} asynchronous sweeps)")
    print(f"{'N':>5}{'P':>6}{'α':>7}{'mean m':>8}{'m ≥ 0.9':>9}{'bit errors':>11}")
    curves, capacities = [], {}
    for n in units:
        rows = retrieval(alphas, n, args.starts, args.sweeps, rng)
        curves.extend(rows)
        capacities[str(n)] = crossing(rows)
        for row in rows:
            errors = row["bit_errors_when_retrieved"]
            print(
                f"{n:>5}{row['patterns']:>6}{row['alpha']:>7.3f}{row['mean_overlap']:>8.3f}"
                f"{row['retrieved']:>9.3f}{'' if errors is None else f'{errors:.4f}':>11}"
            )
    print(
        "capacity (half the patterns retrieved), by N:",
        {n: None if c is None else round(c, 3) for n, c in capacities.items()},
    )
    fit = extrapolate_capacity(capacities)
    if fit is not None:
        print(
            f"fit α_c(N) = {fit[0]:.3f} + {fit[1]:.3f}/√N: α_c(N → ∞) = {fit[0]:.3f}; "
            f"theory {AGS_CAPACITY}"
        )

    print(f"\n3. Dense associative memory, N = {args.dense_units}, {args.noise:.0%} flipped bits")
    kinds = [
        ("x^2 (classic)", {}),
        ("x^3", {"degree": 3}),
        ("x^4", {"degree": 4}),
        ("exp", {"interaction": "exponential"}),
    ]
    dense = dense_memory(kinds, dense_patterns, args.dense_units, args.starts, args.noise, rng)
    print(f"{'F':<15}{'P':>6}{'fixed points':>14}{'recalled':>10}")
    for row in dense:
        print(
            f"{row['memory']:<15}{row['patterns']:>6}"
            f"{row['fixed_points']:>14.3f}{row['recalled_from_noise']:>10.3f}"
        )
    theory = {
        f"x^{n}": krotov_hopfield_capacity(args.dense_units, n) for n in (2, 3, 4)
    }
    print("Krotov & Hopfield error-free capacity:", {k: round(v) for k, v in theory.items()})

    print(
        f"\n4. Modern Hopfield network, one update, β = {args.modern_beta:g}, "
        f"{args.modern_flip:.1%} of the bits flipped"
    )
    print(f"{'d':>4}{'k':>4}{'M':>8}{'retrieved':>11}{'(1−F)^(M−1)':>13}")
    modern = modern_hopfield(
        modern_dims, args.modern_flip, args.modern_beta, args.starts, args.modern_max_patterns, rng
    )
    for row in modern:
        print(
            f"{row['dim']:>4}{row['flipped_bits']:>4}{row['patterns']:>8}"
            f"{row['retrieved']:>11.3f}{row['theory']:>13.3f}"
        )
    halves = {str(d): round(nearest_pattern_success(d, round(args.modern_flip * d), 2)[1]) for d in modern_dims}
    print("patterns at which half are retrieved, theory ln 2 / F, by d:", halves)

    result = {
        "benchmark": "hopfield_capacity",
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "machine": machine(),
        "config": vars(args),
        "one_update_flips": flips,
        "retrieval": curves,
        "summary": {
            "classic_capacity_by_units": capacities,
            "classic_capacity_extrapolated": None if fit is None else fit[0],
            "classic_capacity_fit_slope": None if fit is None else fit[1],
            "classic_capacity_theory": AGS_CAPACITY,
            "krotov_hopfield_capacity": theory,
        },
        "dense": dense,
        "modern": modern,
    }
    return write_results(result, args.output)


if __name__ == "__main__":
    main()
