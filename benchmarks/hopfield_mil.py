"""Multiple-instance learning with `HopfieldPooling`: the reference library's bit-pattern bags.

The task of `ml-jku/hopfield-layers`' bit-pattern demo (its `BitPatternSet`),
generated here from a seed with NumPy: `--bags` bags of `--instances` random bit
patterns of `--bits` bits; `--signals` distinct signal patterns exist, and each
positive bag (half of them) has one instance replaced by one of them; no negative
instance equals a signal or is all zeros. A bag is positive if it holds a signal.
As in the demo, the first and last `--held-out` bags (positives and negatives)
are held out for validation and the middle ones train.

Models: each instance is embedded by the same `Dense(64, relu)`; the bag is
pooled into one vector, then a logistic output:

- `hopfield-pooling`: `HopfieldPooling` (a learned state pattern that retrieves
  from the bag, Ramsauer et al. 2020), with the demo's settings (8 heads, 3 update
  steps, β = 0.25, dropout 0.5);
- `attention-pooling`: `AttentionPooling` (one learned query, soft attention:
  Ilse et al. 2018's attention-based MIL without the gating);
- `mean-pooling`: the bag's mean, a baseline a signal among 16 can hide in.

Reported: validation accuracy per epoch and at the end, per model and seed.
The reference repository shows its HopfieldPooling curve as a plot only, without a
printed figure; a perfect filter scores 1.0.

    python benchmarks/hopfield_mil.py      # any backend; prints, writes JSON
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
from keras_attn.memory import HopfieldPooling  # noqa: E402

MODELS = ("hopfield-pooling", "attention-pooling", "mean-pooling")


def bit_pattern_bags(bags, instances, signals, bits, seed):
    """`(bags (n, instances, bits), targets (n,))`, positives first (as the reference)."""
    rng = np.random.default_rng(seed)
    patterns = set()
    while len(patterns) < signals:
        candidate = tuple(rng.integers(0, 2, bits))
        if any(candidate):
            patterns.add(candidate)
    signal = np.array(sorted(patterns), "float32")
    data = rng.integers(0, 2, size=(bags, instances, bits)).astype("float32")
    while True:
        empty = data.sum(-1) == 0
        is_signal = (data[:, :, None, :] == signal[None, None]).all(-1).any(-1)
        invalid = empty | is_signal
        if not invalid.any():
            break
        data[invalid] = rng.integers(0, 2, size=(int(invalid.sum()), bits))
    targets = np.zeros(bags, "float32")
    positives = (bags + 1) // 2
    targets[:positives] = 1.0
    where = rng.integers(0, instances, size=positives)
    data[np.arange(positives), where] = signal[rng.integers(0, signals, size=positives)]
    return data, targets


def build(name, instances, bits, seed, learning_rate):
    keras.utils.set_random_seed(seed)
    bag = keras.Input((instances, bits))
    # Every model first embeds each instance alike; only the pooling differs.
    instances_embedded = keras.layers.Dense(64, activation="relu")(bag)
    if name == "hopfield-pooling":
        pooled = HopfieldPooling(num_heads=8, key_dim=8, scaling=0.25, update_steps_max=3,
                                 dropout=0.5, seed=seed)(instances_embedded)
    elif name == "attention-pooling":
        pooled = keras_attn.AttentionPooling()(instances_embedded)
    else:
        pooled = keras.layers.GlobalAveragePooling1D()(instances_embedded)
    logit = keras.layers.Dense(1)(keras.layers.Flatten()(pooled))
    model = keras.Model(bag, logit)
    model.compile(keras.optimizers.AdamW(learning_rate),
                  keras.losses.BinaryCrossentropy(from_logits=True),
                  metrics=[keras.metrics.BinaryAccuracy(threshold=0.0)])
    return model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bags", type=int, default=2048)
    parser.add_argument("--instances", type=int, default=16)
    parser.add_argument("--signals", type=int, default=8)
    parser.add_argument("--bits", type=int, default=8)
    parser.add_argument("--held-out", type=int, default=256,
                        help="bags held out at each end (256 + 256, as the demo)")
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--output", default=default_path("hopfield_mil"))
    args = parser.parse_args(argv)

    data, targets = bit_pattern_bags(args.bags, args.instances, args.signals, args.bits, 44)
    held_out = np.r_[0:args.held_out, args.bags - args.held_out:args.bags]
    train = np.arange(args.held_out, args.bags - args.held_out)
    result = {**header("hopfield_mil", args), "models": {}}
    print(f"{args.bags} bags of {args.instances} × {args.bits} bits, {args.signals} signals; "
          f"train {len(train)}, validation {len(held_out)}; {args.epochs} epochs")
    for name in args.models:
        runs = []
        for seed in range(args.seeds):
            model = build(name, args.instances, args.bits, seed, args.learning_rate)
            start = time.time()
            history = model.fit(data[train], targets[train], batch_size=args.batch_size,
                                epochs=args.epochs, shuffle=True, verbose=0,
                                validation_data=(data[held_out], targets[held_out]))
            curve = [float(a) for a in history.history["val_binary_accuracy"]]
            runs.append({"seed": seed, "validation_accuracy": curve,
                         "final": curve[-1], "seconds": time.time() - start})
        finals = [r["final"] for r in runs]
        result["models"][name] = {"runs": runs, "final": finals}
        curve = np.mean([r["validation_accuracy"] for r in runs], axis=0)
        shown = " ".join(f"{a:.2f}" for a in curve[:: max(1, len(curve) // 10)])
        print(f"  {name:<18} final validation accuracy {np.mean(finals):.3f} "
              f"(per seed {', '.join(f'{f:.3f}' for f in finals)}); mean curve {shown}")
    write_results(result, args.output)
    return result


if __name__ == "__main__":
    main()
