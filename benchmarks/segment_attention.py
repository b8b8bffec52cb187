"""Structured (linear-chain CRF) attention against soft attention on a noisy span.

Kim, Denton, Hoang & Rush 2017 ("Structured Attention Networks") replace the
softmax by the marginals of a graphical model: `SegmentAttention`'s
`p(z_j = 1)` of a binary chain `p(z) ∝ exp(Σ_j z_j s_j + Σ_j A[z_{j−1}, z_j])`,
so it can select a *contiguous span*, where a softmax's weights sum to one and
spread over positions it cannot tell apart.

The task (generated from a seed): a sequence of `T` tokens, each a value
`v_j ~ N(0, 1)` and a noisy piece of evidence, 1 inside a random contiguous span
`[a, b]` and 0 outside, plus `N(0, σ²)` noise; the target is the sum of the values
inside the span, `Σ_{a≤j≤b} v_j`. Two things favour the chain: a sum needs
weights that are each near 0 or 1 (a softmax's sum to one, so its context is an
average whatever the span's length), and contiguity lets the transitions `A`
correct a position whose evidence the noise flipped. Each token's key is its
own features only (no encoder). Both models score `qᵀ W k_j` with a learned
query, attend to the values, and read the context with one linear unit.

Reported: held-out mean squared error and the fraction of sequences within 0.1 of
the target, against training epochs, per model and seed; and the variance of
the target (the error of predicting its mean).

    python benchmarks/segment_attention.py      # any backend; prints, writes JSON
"""

import argparse
import os
import sys
import time

import keras
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_io import default_path, header, write_results  # noqa: E402

import keras_attn  # noqa: E402

MODELS = {"segment (CRF)": keras_attn.SegmentAttention, "soft": keras_attn.Attention}


def noisy_spans(rng, n, length, noise):
    """`(tokens (n, T, 2), targets (n,))`: features `[value, evidence]`, where the
    evidence is 1 inside a random span and 0 outside, plus Gaussian noise; the
    target is the sum of the values inside the span."""
    values = rng.normal(size=(n, length)).astype("float32")
    ends = np.sort(rng.integers(0, length, size=(n, 2)), 1)
    positions = np.arange(length)[None]
    inside = (positions >= ends[:, :1]) & (positions <= ends[:, 1:])
    evidence = inside + rng.normal(scale=noise, size=(n, length))
    tokens = np.stack([values, evidence.astype("float32")], -1)
    return tokens, (values * inside).sum(1).astype("float32")


def build(layer_class, length, seed, learning_rate):
    keras.utils.set_random_seed(seed)
    tokens = keras.Input((length, 2))
    ones = keras.layers.Lambda(lambda t: keras.ops.ones_like(t[:, 0, :1]))(tokens)
    query = keras.layers.Dense(8, use_bias=False)(ones)  # a learned query
    values = keras.layers.Lambda(lambda t: t[..., :1])(tokens)
    context = layer_class(score="general")(query, values, key=tokens)
    model = keras.Model(tokens, keras.layers.Dense(1)(context))
    model.compile(keras.optimizers.Adam(learning_rate), "mse")
    return model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--length", type=int, default=12)
    parser.add_argument("--noise", type=float, default=0.5,
                        help="standard deviation of the span evidence's noise")
    parser.add_argument("--train-size", type=int, default=8192)
    parser.add_argument("--test-size", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=1e-2)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--output", default=default_path("segment_attention"))
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    x_train, y_train = noisy_spans(rng, args.train_size, args.length, args.noise)
    x_test, y_test = noisy_spans(rng, args.test_size, args.length, args.noise)
    result = {**header("segment_attention", args), "target_variance": float(y_test.var()), "models": {}}
    print(f"sum over a noisy span in {args.length} tokens (noise {args.noise}); held-out "
          f"target variance "
          f"{y_test.var():.3f}; {args.epochs} epochs of {args.train_size}")
    for name, layer_class in MODELS.items():
        runs = []
        for seed in range(args.seeds):
            model = build(layer_class, args.length, seed, args.learning_rate)
            curve, start = [], time.time()
            for _ in range(args.epochs):
                model.fit(x_train, y_train, batch_size=args.batch_size, epochs=1, verbose=0)
                predicted = model.predict(x_test, batch_size=1000, verbose=0)[:, 0]
                curve.append({"mse": float(np.mean((predicted - y_test) ** 2)),
                              "within_0.1": float(np.mean(np.abs(predicted - y_test) < 0.1))})
            runs.append({"seed": seed, "curve": curve, "final": curve[-1],
                         "seconds": time.time() - start})
        mse = [r["final"]["mse"] for r in runs]
        within = [r["final"]["within_0.1"] for r in runs]
        result["models"][name] = {"runs": runs, "final_mse": mse, "final_within_0.1": within}
        print(f"  {name:<14} held-out MSE {np.mean(mse):.4f} (per seed "
              f"{', '.join(f'{m:.4f}' for m in mse)}); within 0.1: {np.mean(within):.3f}")
    write_results(result, args.output)
    return result


if __name__ == "__main__":
    main()
