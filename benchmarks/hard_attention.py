"""Soft, Gumbel and REINFORCE hard attention on a task only a good pointer solves.

The task (generated from a seed): a sequence of `T` items, each a one-hot value
of `C` classes and a marker bit; exactly one item is marked, and the target is
its value. The model pools the sequence into a query, attends over the items
with a general score `qᵀ W k`, and classifies the context:

- `soft`: `keras_attn.Attention`, the context `Σ_j α_j v_j`;
- `gumbel`: `HardAttention(estimator="gumbel")`, straight-through Gumbel-softmax;
- `reinforce`: `HardAttention(estimator="reinforce")` with `PolicyGradient` and
  its moving-average baseline (Xu et al. 2015, section 4.1);
- `reinforce-no-baseline`: the same with `baseline=None`.

A hard model answers from the one item it picks (the argmax at evaluation), so
its accuracy is the chance that it points at the marked item, plus a guess.

Two measurements:

1. **Accuracy against training steps** on held-out sequences, every
   `--eval-every` steps, per estimator and seed; and the steps each needed to
   reach `--target` accuracy.
2. **Gradient variance of the REINFORCE estimator**, with and without the
   baseline: the gradient of the score parameters (the query projection and
   `W`), at fixed weights and a fixed batch, drawn `--draws` times (only the
   choices are resampled). Reported: the summed per-parameter variance, and the
   same relative to the squared norm of the mean gradient. Measured at the
   start and after `--variance-at` steps of REINFORCE training.

JAX backend (the gradients are taken with `jax.grad` over `stateless_call`);
any CPU.

    KERAS_BACKEND=jax python benchmarks/hard_attention.py      # prints, writes JSON
"""

import argparse
import os
import sys
import time

if __name__ == "__main__":  # run as a script: JAX unless told otherwise
    os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_io import default_path, header, write_results  # noqa: E402

import keras_attn  # noqa: E402

ESTIMATORS = ("soft", "gumbel", "reinforce", "reinforce-no-baseline")


def marked_items(rng, n, length, classes):
    """`(items (n, T, C + 1), targets (n,))`: one marked item; its value is the target."""
    values = rng.integers(0, classes, size=(n, length))
    marked = rng.integers(0, length, size=n)
    items = np.zeros((n, length, classes + 1), "float32")
    items[np.arange(n)[:, None], np.arange(length)[None], values] = 1.0
    items[np.arange(n), marked, classes] = 1.0
    return items, values[np.arange(n), marked].astype("int32")


def build(estimator, args, seed):
    """`(training model, inference model, score layers)` for one estimator."""
    keras.utils.set_random_seed(seed)
    items = keras.Input((args.length, args.classes + 1), name="items")
    to_query = keras.layers.Dense(args.units, name="query")
    query = to_query(keras.layers.GlobalAveragePooling1D()(items))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    classify = keras.layers.Dense(args.classes, name="classify")
    if estimator == "soft":
        attention = keras_attn.Attention(score="general")
        logits = classify(attention(query, items))
        model = keras.Model(items, logits)
        model.compile(optimizer=keras.optimizers.Adam(args.learning_rate), loss=loss)
        return model, model, [to_query, attention]
    if estimator == "gumbel":
        attention = keras_attn.HardAttention(score="general", estimator="gumbel", seed=seed)
        logits = classify(attention(query, items))
        model = keras.Model(items, logits)
        model.compile(optimizer=keras.optimizers.Adam(args.learning_rate), loss=loss)
        return model, model, [to_query, attention]
    attention = keras_attn.HardAttention(score="general", estimator="reinforce", seed=seed,
                                         entropy_weight=args.entropy_weight)
    context, log_prob = attention(query, items, return_log_prob=True)
    logits = classify(context)
    targets = keras.Input((), dtype="int32", name="targets")
    baseline = None if estimator == "reinforce-no-baseline" else "moving_average"
    outputs = keras_attn.PolicyGradient(loss, baseline=baseline)(targets, logits, log_prob)
    model = keras.Model([items, targets], outputs)
    model.compile(optimizer=keras.optimizers.Adam(args.learning_rate))
    return model, keras.Model(items, logits), [to_query, attention]


def accuracy(inference, items, targets):
    predictions = inference.predict(items, batch_size=1000, verbose=0).argmax(-1)
    return float(np.mean(predictions == targets))


def train_curve(estimator, args, seed, test):
    rng = np.random.default_rng(seed)
    model, inference, _ = build(estimator, args, seed)
    curve, start = [], time.time()
    for step in range(0, args.steps, args.eval_every):
        items, targets = marked_items(rng, args.eval_every * args.batch_size, args.length,
                                      args.classes)
        x = items if model is inference else [items, targets]
        model.fit(x, targets if model is inference else None, batch_size=args.batch_size,
                  epochs=1, shuffle=False, verbose=0)
        curve.append((step + args.eval_every, accuracy(inference, *test)))
    reached = next((s for s, a in curve if a >= args.target), None)
    return {"curve": curve, "steps_to_target": reached, "seconds": time.time() - start}


def gradient_variance(args, seed, warmup_steps):
    """Variance of the score parameters' gradient under resampled choices."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(seed + 100)
    model, _, score_layers = build("reinforce", args, seed)
    if warmup_steps:
        items, targets = marked_items(rng, warmup_steps * args.batch_size, args.length,
                                      args.classes)
        model.fit([items, targets], None, batch_size=args.batch_size, epochs=1,
                  shuffle=False, verbose=0)
    endpoint = model.layers[-1]
    trainable = [v.value for v in model.trainable_variables]
    ids = [id(v) for v in model.trainable_variables]
    watched = [ids.index(id(v)) for layer in score_layers for v in layer.trainable_variables]
    baseline_vars = {id(endpoint.loss_average), id(endpoint.steps)}
    items, targets = marked_items(rng, args.batch_size, args.length, args.classes)

    def loss_fn(trainable, non_trainable):
        _, non_trainable, losses = model.stateless_call(
            trainable, non_trainable, [items, targets], training=True, return_losses=True)
        return sum(losses), non_trainable

    grad_fn = jax.jit(jax.grad(loss_fn, has_aux=True))
    baseline_value = float(keras.ops.convert_to_numpy(endpoint.current_baseline()))
    result = {"after_steps": warmup_steps, "baseline": baseline_value}
    for label, keep_baseline in (("with_baseline", True), ("without_baseline", False)):
        non_trainable = []
        for v in model.non_trainable_variables:
            value = v.value
            if not keep_baseline and id(v) == id(endpoint.steps):
                value = jnp.zeros_like(value)  # no step seen: the baseline is 0
            non_trainable.append(value)
        fixed = [i for i, v in enumerate(model.non_trainable_variables)
                 if id(v) in baseline_vars]
        draws = []
        for _ in range(args.draws):
            grads, updated = grad_fn(trainable, non_trainable)
            # Keep the baseline where it was; let the samplers' seeds advance.
            non_trainable = [non_trainable[i] if i in fixed else value
                             for i, value in enumerate(updated)]
            draws.append(np.concatenate([np.ravel(grads[i]) for i in watched]))
        draws = np.stack(draws)
        total_variance = float(draws.var(axis=0, ddof=1).sum())
        mean_norm = float(np.sum(draws.mean(axis=0) ** 2))
        result[label] = {"total_variance": total_variance,
                         "relative_variance": total_variance / max(mean_norm, 1e-30)}
    result["variance_ratio"] = (result["without_baseline"]["total_variance"]
                                / result["with_baseline"]["total_variance"])
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--length", type=int, default=16)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--units", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--entropy-weight", type=float, default=0.1,
                        help="REINFORCE's entropy bonus λ_H")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--test-size", type=int, default=2000)
    parser.add_argument("--target", type=float, default=0.99)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--variance-at", type=int, nargs="+", default=[50, 300],
                        help="training steps before each variance measurement")
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS),
                        choices=ESTIMATORS)
    parser.add_argument("--output", default=default_path("hard_attention"))
    args = parser.parse_args(argv)
    if keras.backend.backend() != "jax":
        parser.error(f"needs KERAS_BACKEND=jax; received {keras.backend.backend()!r}")

    test = marked_items(np.random.default_rng(12345), args.test_size, args.length,
                        args.classes)
    result = {**header("hard_attention", args), "estimators": {}, "gradient_variance": []}
    print(f"marked item among {args.length}, {args.classes} classes; held-out accuracy "
          f"every {args.eval_every} steps (batch {args.batch_size}), {args.seeds} seeds")
    for estimator in args.estimators:
        runs = [train_curve(estimator, args, seed, test) for seed in range(args.seeds)]
        steps = [r["steps_to_target"] for r in runs]
        finals = [r["curve"][-1][1] for r in runs]
        result["estimators"][estimator] = {"runs": runs, "final_accuracy": finals,
                                           "steps_to_target": steps}
        curve = np.mean([[a for _, a in r["curve"]] for r in runs], axis=0)
        shown = " ".join(f"{a:.2f}" for a in curve[:: max(1, len(curve) // 8)])
        print(f"  {estimator:<22} final {np.mean(finals):.3f} (min {min(finals):.3f}); "
              f"steps to {args.target:.0%}: {steps}; mean curve {shown}")
    print(f"\nREINFORCE gradient of the score parameters, {args.draws} draws of the "
          f"choices on one batch")
    for seed in range(args.seeds):
        for at in args.variance_at:
            v = gradient_variance(args, seed, at)
            result["gradient_variance"].append({"seed": seed, **v})
            print(f"  seed {seed}, after {at:>4} steps (b = {v['baseline']:.3f}): variance "
                  f"{v['with_baseline']['total_variance']:.3e} with the baseline, "
                  f"{v['without_baseline']['total_variance']:.3e} without "
                  f"({v['variance_ratio']:.1f}×); relative "
                  f"{v['with_baseline']['relative_variance']:.2f} vs "
                  f"{v['without_baseline']['relative_variance']:.2f}")
    write_results(result, args.output)
    return result


if __name__ == "__main__":
    main()
