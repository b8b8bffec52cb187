"""Causal LinearAttention and SparseAttention against softmax attention as T grows.

TensorFlow backend, CPU, forward+backward per step (gradients w.r.t. the weights
and the input), median of `--steps` timed steps after warm-up, the two layers
timed in alternating blocks (`attention_layers.time_alternating`). Softmax
attention's time and memory grow as T²; linear attention's, and sparse
attention's over a fixed pattern (BigBird-style: a window of `--window`, 2 global
tokens, 1 random block), as T. The table shows where the lines cross on this
machine and the ratios at each length.

    python benchmarks/efficient_attention.py           # prints a table, writes JSON
"""

import argparse
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_layers import time_alternating, train_step_fn  # noqa: E402
from results_io import default_path, tf_cpu_header, write_results  # noqa: E402

import keras_attn  # noqa: E402


class CausalSelfAttention(keras.layers.Layer):
    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def call(self, x):
        return self.attention(x, x, use_causal_mask=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--lengths", default="256,512,1024,2048,4096")
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--chunk-size", type=int, default=64)
    parser.add_argument("--window", type=int, default=64, help="sparse attention's window")
    parser.add_argument("--steps", type=int, default=10, help="timed steps (≥ 10)")
    parser.add_argument("--jit", action="store_true", help="jit_compile the steps")
    parser.add_argument("--output", default=default_path("efficient_attention"))
    args = parser.parse_args(argv)
    if args.steps < 10:
        parser.error("--steps must be at least 10")
    rng = np.random.default_rng(0)
    key_dim = args.dim // args.heads
    rows = []
    print(
        f"{'T':>6}{'softmax ms':>12}{'linear ms':>11}{'sparse ms':>11}"
        f"{'linear/softmax':>16}{'sparse/softmax':>16}"
    )
    for length in (int(t) for t in args.lengths.split(",")):
        x = tf.constant(rng.normal(size=(args.batch, length, args.dim)).astype("float32"))
        layers = {
            "softmax": CausalSelfAttention(
                keras_attn.MultiHeadAttention(num_heads=args.heads, key_dim=key_dim)
            ),
            "linear": CausalSelfAttention(
                keras_attn.LinearAttention(
                    num_heads=args.heads, key_dim=key_dim, chunk_size=args.chunk_size
                )
            ),
            "sparse": CausalSelfAttention(
                keras_attn.SparseAttention(
                    num_heads=args.heads, key_dim=key_dim, window=args.window,
                    global_tokens=2, random_blocks=1, seed=0,
                )
            ),
        }
        for layer in layers.values():
            layer(x)
        times = time_alternating(
            {name: train_step_fn(layer, (x,), args.jit) for name, layer in layers.items()},
            args.steps,
        )
        row = {
            "length": length,
            "softmax_ms": 1e3 * times["softmax"],
            "linear_ms": 1e3 * times["linear"],
            "sparse_ms": 1e3 * times["sparse"],
            "linear_over_softmax": times["linear"] / times["softmax"],
            "sparse_over_softmax": times["sparse"] / times["softmax"],
        }
        rows.append(row)
        print(
            f"{length:>6}{row['softmax_ms']:>12.2f}{row['linear_ms']:>11.2f}"
            f"{row['sparse_ms']:>11.2f}{row['linear_over_softmax']:>16.3f}"
            f"{row['sparse_over_softmax']:>16.3f}"
        )
    result = {
        **tf_cpu_header("efficient_attention", args),
        "rows": rows,
    }
    return write_results(result, args.output)


if __name__ == "__main__":
    main()
