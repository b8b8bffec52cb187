"""Forward+backward time per step of the attention layers against Keras's own.

TensorFlow backend, CPU. For each case: the median of `--steps` timed steps after
warm-up, with and without `jit_compile`, and its *matmul floor*: the case's matmul
FLOP count (forward + backward = 3× forward) divided by the GEMM rate measured in
the same run. Ours and Keras's are timed in alternating blocks so that machine
drift affects both alike, each block after `--settle-ms` of untimed calls (see
`time_alternating`).

    python benchmarks/attention_layers.py            # prints a table, writes JSON
    python benchmarks/attention_layers.py --threads 1   # one TensorFlow thread

Cases (B=64, T=128, d=256, 8 heads, as in the foundation issue):
  (a) keras_attn.MultiHeadAttention vs keras.layers.MultiHeadAttention
  (b) keras_attn.LuongAttention(score="dot") vs keras.layers.Attention(); the
      script also checks and prints whether the two build the same step
      (`computation`), which makes any gap between their times noise
  (c) one BahdanauAttention decoder step over T keys, units=256, with the key
      projection precomputed once per sequence vs recomputed every step; timed
      forward+backward (teacher-forced training) and forward only (decoding), for
      a memory of d=256 features (the issue's size) and of 2·units=512 (the
      paper's bidirectional encoder, whose annotations are twice the units wide)
"""

import argparse
import collections
import functools
import os
import re
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_io import default_path, tf_cpu_header, write_results  # noqa: E402

import keras_attn  # noqa: E402


class KerasDotAttention(keras.layers.Layer):
    """`keras.layers.Attention()` called as `(query, values)`, as our layers are."""

    def __init__(self):
        super().__init__()
        self.attention = keras.layers.Attention()

    def call(self, query, values):
        return self.attention([query, values])


def gemm_rate(m, k, n, steps):
    """FLOP/s of a float32 (m×k)·(k×n) matmul, the machine's dense-math ceiling here."""
    a = tf.random.normal((m, k))
    b = tf.random.normal((k, n))
    fn = tf.function(lambda x, y: tf.matmul(x, y))
    for _ in range(3):
        fn(a, b).numpy()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        fn(a, b).numpy()
        times.append(time.perf_counter() - start)
    return 2.0 * m * k * n / statistics.median(times)


def train_step_fn(layer, inputs, jit):
    """A compiled fwd+bwd step: gradients of sum(output²) w.r.t. weights and inputs."""
    variables = layer.trainable_variables

    @tf.function(jit_compile=jit)
    def step(*args):
        with tf.GradientTape() as tape:
            tape.watch(args)
            out = layer(*args)
            out = out[0] if isinstance(out, (list, tuple)) else out
            loss = tf.reduce_sum(tf.square(out))
        grads = tape.gradient(loss, [*variables, *args])
        return loss, grads

    return functools.partial(step, *inputs)


def forward_fn(layer, inputs, jit):
    """A compiled forward call (what a decoder pays per generated token)."""

    @tf.function(jit_compile=jit)
    def step(*args):
        out = layer(*args)
        out = out[0] if isinstance(out, (list, tuple)) else out
        return tf.reduce_sum(out), None

    return functools.partial(step, *inputs)


# Graph bookkeeping that runs no arithmetic (and whose count depends on how a layer
# wraps its call, not on what it computes).
_BOOKKEEPING_OPS = {"Const", "Identity", "NoOp", "Placeholder", "ReadVariableOp"}


def computation(step_call, jit):
    """What a step from `train_step_fn`/`forward_fn` computes, as a comparable value.

    Without jit: how many ops of each type and output shapes its TensorFlow graph
    holds (bookkeeping ops aside). With jit: the lines of XLA's optimised HLO
    module, fusion bodies included, without instruction names, source metadata
    or order. Neither keeps which operation feeds which; what equal values do
    show is that two steps run the same operations on tensors of the same
    shapes, so a gap between their times is the machine's noise.
    """
    step, inputs = step_call.func, step_call.args
    if not jit:
        graph = step.get_concrete_function(*inputs).graph
        return collections.Counter(
            (op.type, *(str(output.shape) for output in op.outputs))
            for op in graph.get_operations()
            if op.type not in _BOOKKEEPING_OPS
        )
    hlo = step.experimental_get_compiler_ir(*inputs)(stage="optimized_hlo")
    lines = []
    for line in hlo.splitlines()[1:]:  # the first names the module
        line = re.sub(r", metadata=\{[^}]*\}", "", line)
        line = re.sub(r"%[\w.\-]+", "%", line)
        lines.append(line.strip())
    return collections.Counter(lines)


def time_alternating(fns, steps, block=5, warmup=3, settle_s=0.1):
    """Median seconds per call of each fn, timed in alternating blocks.

    Before each timed block the fn runs untimed for `settle_s` seconds (at least
    two calls). On the 2-core CPUs measured, a step right after another kind of
    work is slow and only recovers over some 40 ms of back-to-back calls: the
    precomputed Bahdanau step took 5.3 ms on the first call after five
    recomputed ones and 3.8 ms by the tenth, and 8.3 ms after 100 ms idle. A
    block timed straight after the switch measures that recovery, which hits a
    3 ms step far harder than a 100 ms one, instead of the step a training
    loop runs back to back.
    """

    def run(fn):
        loss, _ = fn()
        loss.numpy()

    for fn in fns.values():
        for _ in range(warmup):
            tf.nest.map_structure(lambda t: t.numpy() if t is not None else t, fn())
    samples = {name: [] for name in fns}
    while min(len(s) for s in samples.values()) < steps:
        for name, fn in fns.items():
            settle_until = time.perf_counter() + settle_s
            calls = 0
            while calls < 2 or time.perf_counter() < settle_until:
                run(fn)
                calls += 1
            for _ in range(block):
                start = time.perf_counter()
                run(fn)
                samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(s[:steps]) for name, s in samples.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20, help="timed steps (≥ 10)")
    parser.add_argument(
        "--settle-ms",
        type=float,
        default=100.0,
        help="untimed back-to-back calls before each timed block, in ms (0: two calls)",
    )
    parser.add_argument(
        "--memory-dims",
        default="256,512",
        help="comma-separated memory widths for case (c); the first is the headline",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="TensorFlow intra- and inter-op threads (0: TensorFlow's default, one per core)",
    )
    parser.add_argument(
        "--output",
        default=default_path("attention_layers"),
    )
    args = parser.parse_args(argv)
    if args.steps < 10:
        parser.error("--steps must be at least 10")
    if args.threads < 0:
        parser.error(f"--threads must be 0 or more; received {args.threads}")
    if args.threads:
        # Must happen before TensorFlow runs its first op.
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    try:
        memory_dims = [int(x) for x in args.memory_dims.split(",")]
    except ValueError:
        parser.error(f"--memory-dims must be comma-separated integers; received {args.memory_dims!r}")
    b, t, d, h, u = args.batch, args.length, args.dim, args.heads, args.units
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(b, t, d)).astype("float32"))
    y = tf.constant(rng.normal(size=(b, t, d)).astype("float32"))
    state = tf.constant(rng.normal(size=(b, d)).astype("float32"))

    rate = gemm_rate(b * t, d, d, args.steps)
    print(f"GEMM rate ({b * t}x{d}x{d} float32): {rate / 1e9:.1f} GFLOP/s")

    # Forward matmul FLOPs of each case; backward costs twice the forward.
    mha_flops = 8 * b * t * d * d + 4 * b * t * t * d
    dot_flops = 4 * b * t * t * d

    def bahdanau_step_flops(memory_dim):
        query = 2 * b * d * u + 2 * b * t * u + 2 * b * t * memory_dim
        return {"precomputed": query, "recomputed": query + 2 * b * t * memory_dim * u}

    ours_mha = keras_attn.MultiHeadAttention(num_heads=h, key_dim=d // h)
    keras_mha = keras.layers.MultiHeadAttention(num_heads=h, key_dim=d // h)
    ours_mha(x, y)
    keras_mha(x, y)

    ours_dot = keras_attn.LuongAttention(score="dot")
    keras_dot = KerasDotAttention()

    bahdanau_inputs = {}
    for memory_dim in memory_dims:
        memory = tf.constant(rng.normal(size=(b, t, memory_dim)).astype("float32"))
        attention = keras_attn.BahdanauAttention(units=u)
        attention(state, memory)
        bahdanau_inputs[memory_dim] = (attention, memory, attention.precompute_keys(memory))

    def timed(fns):
        return time_alternating(fns, args.steps, settle_s=args.settle_ms / 1e3)

    cases = []
    same_as_keras = {}
    for jit in (False, True):
        times = timed(
            {
                "ours": train_step_fn(ours_mha, (x, y), jit),
                "keras": train_step_fn(keras_mha, (x, y), jit),
            },
        )
        cases.append(("a", "MultiHeadAttention", jit, times, {k: mha_flops for k in times}, {}))
        dot_steps = {
            "ours": train_step_fn(ours_dot, (x, y), jit),
            "keras": train_step_fn(keras_dot, (x, y), jit),
        }
        same_as_keras[str(jit)] = computation(dot_steps["ours"], jit) == computation(
            dot_steps["keras"], jit
        )
        times = timed(dot_steps)
        cases.append(("b", "dot attention", jit, times, {k: dot_flops for k in times}, {}))

        class Step(keras.layers.Layer):
            def __init__(self, attention, precomputed):
                super().__init__()
                self.attention = attention
                self.precomputed = precomputed

            def call(self, query, values, keys):
                return self.attention(
                    query, values, precomputed_keys=keys if self.precomputed else None
                )

        for memory_dim, (attention, memory, keys) in bahdanau_inputs.items():
            for label, make in (("Bahdanau step", train_step_fn), ("Bahdanau step fwd", forward_fn)):
                inputs = (state, memory, keys)
                times = timed(
                    {
                        "precomputed": make(Step(attention, True), inputs, jit),
                        "recomputed": make(Step(attention, False), inputs, jit),
                    },
                )
                cases.append(
                    (
                        "c", f"{label} d={memory_dim}", jit, times,
                        bahdanau_step_flops(memory_dim), {"memory_dim": memory_dim},
                    )
                )

    rows = []
    print()
    header = f"{'case':<5}{'layer':<28}{'jit':<6}{'variant':<13}{'ms/step':>9}{'floor ms':>10}{'x floor':>9}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    for case, name, jit, times, flop_of, extra in cases:
        passes = 1 if " fwd" in name else 3
        if case == "c":
            reference = times["recomputed"]
            ratio_label = "speedup"
        else:
            reference = times["keras"]
            ratio_label = "ours/keras"
        for variant, seconds in times.items():
            floor = passes * flop_of[variant] / rate
            ratio = (reference / seconds) if case == "c" else (seconds / reference)
            row = {
                "case": case,
                "layer": name,
                "jit_compile": jit,
                "pass": "forward" if passes == 1 else "forward+backward",
                "variant": variant,
                "ms_per_step": 1e3 * seconds,
                "matmul_floor_ms": 1e3 * floor,
                "times_floor": seconds / floor,
                ratio_label: ratio,
                **extra,
            }
            rows.append(row)
            shown = f"{ratio:.3f}" if variant in ("ours", "precomputed") else ""
            print(
                f"{case:<5}{name:<28}{str(jit):<6}{variant:<13}{1e3 * seconds:>9.2f}"
                f"{1e3 * floor:>10.2f}{seconds / floor:>9.2f}{shown:>8}"
            )
    summary = {
        "mha_ours_over_keras": {
            str(r["jit_compile"]): r["ours/keras"] for r in rows if r["case"] == "a" and r["variant"] == "ours"
        },
        "dot_ours_over_keras": {
            str(r["jit_compile"]): r["ours/keras"] for r in rows if r["case"] == "b" and r["variant"] == "ours"
        },
        "dot_same_computation_as_keras": same_as_keras,
        "bahdanau_precomputed_speedup": {
            f'{r["pass"]}, jit={r["jit_compile"]}, d={r["memory_dim"]}': r["speedup"]
            for r in rows if r["case"] == "c" and r["variant"] == "precomputed"
        },
    }
    print()
    print("ours/keras (≤ 1.05 wanted), by jit_compile:")
    print("  MultiHeadAttention:", {k: round(v, 3) for k, v in summary["mha_ours_over_keras"].items()})
    print("  dot attention:     ", {k: round(v, 3) for k, v in summary["dot_ours_over_keras"].items()})
    print("  dot attention runs the same computation as Keras's (TF op counts without jit,")
    print("  optimised HLO with it):", same_as_keras)
    print("Bahdanau step speedup from precomputed keys (≥ 5 wanted):",
          {k: round(v, 2) for k, v in summary["bahdanau_precomputed_speedup"].items()})
    result = {
        **tf_cpu_header("attention_layers", args),
        "gemm_gflops": rate / 1e9,
        "tf_threads": {
            "intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
        },
        "rows": rows,
        "summary": summary,
    }
    return write_results(result, args.output)


if __name__ == "__main__":
    main()
