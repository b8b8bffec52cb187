"""Translator speed: training throughput against a Keras built-ins baseline, and
SavedModel serving latency.

    python benchmarks/translator.py          # prints tables, writes JSON

Training throughput is target tokens (non-padding) per second of `model.fit`, on
the built-in date corpus, batch 64: after one warm-up epoch each (it compiles), ours
and the baseline run `--rounds` alternating epochs of `--steps` batches, so machine
drift hits both alike, and the median epoch counts. For Bahdanau and Luong-general
attention, with and without `jit_compile`. The baseline has the same sizes but only Keras
built-ins inside its decoder step: `keras.layers.AdditiveAttention` (Bahdanau)
or `keras.layers.Attention` (Luong "general") with their own `Dense` projections,
applied to the encoder outputs at every step, as the TensorFlow tutorials do.

Latency: the exported `serving_default` (greedy and beam 4) loaded with
`tf.saved_model.load`, p50 / p99 over `--calls` calls at batch 1 and batch 64.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import keras_attn.training  # noqa: E402, F401, I001  (its TensorFlow settings, before Keras starts TensorFlow)

import keras  # noqa: E402
from keras import ops  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_io import default_path, write_results  # noqa: E402

from keras_attn.models import translator as T  # noqa: E402
from keras_attn.models.text import Vocabulary, encode_batch  # noqa: E402
from keras_attn.training.tasks.translator.dates import date_splits  # noqa: E402


class TutorialAttentionCell(keras.layers.Layer):
    """Baseline decoder step from Keras built-ins; projects the keys every step."""

    def __init__(self, units, memory_size, attention_units, attention, **kwargs):
        super().__init__(**kwargs)
        self.gru = keras.layers.GRUCell(units)
        self.query_dense = keras.layers.Dense(attention_units, use_bias=False)
        self.key_dense = keras.layers.Dense(attention_units, use_bias=False)
        self.attention = (
            keras.layers.AdditiveAttention(use_scale=True)
            if attention == "bahdanau"
            else keras.layers.Attention(use_scale=True)
        )
        self.attention_kind = attention
        self.attention_layer = keras.layers.Dense(units, activation="tanh", use_bias=False)
        self.units, self.memory_size = units, memory_size
        self.state_size = [units, units, 1]
        self.output_size = units

    def build(self, inputs_shape):
        self.gru.build((None, inputs_shape[-1] + self.units))
        query_size = self.units  # Luong's query is the GRU output itself
        if self.attention_kind == "bahdanau":
            self.query_dense.build((None, 1, self.units))
            query_size = self.query_dense.units
        self.key_dense.build((None, None, self.memory_size))
        self.attention_layer.build((None, self.units + self.memory_size))
        # Built here, so its `scale` exists when `compile_translator` builds the
        # optimizer over the model's variables.
        self.attention.build(
            [(None, 1, query_size), (None, None, self.memory_size), (None, None, self.key_dense.units)]
        )

    def call(self, inputs, states):
        h, previous_attention, memory = states
        output, new_h = self.gru(ops.concatenate([inputs, previous_attention], -1), h)
        new_h = new_h[0] if isinstance(new_h, (list, tuple)) else new_h
        query = ops.expand_dims(output, 1)
        if self.attention_kind == "bahdanau":
            query = self.query_dense(query)
        keys = self.key_dense(memory)  # recomputed at every step
        context = self.attention([query, memory, keys])[:, 0]
        attention = self.attention_layer(ops.concatenate([context, output], -1))
        return attention, [new_h, attention, memory]


def baseline_model(ours):
    """The tutorial's attention decoder on our encoder, at the sizes of `ours`."""
    source = keras.Input((None,), dtype="int32", name="source")
    target_in = keras.Input((None,), dtype="int32", name="target_in")
    encoder = T.TranslatorEncoder(ours.source_vocab_size, ours.embedding_dim,
                                  ours.encoder_units, ours.decoder_units, name="encoder")
    memory, _, cell_states = encoder(source)
    cell = TutorialAttentionCell(ours.decoder_units, 2 * ours.encoder_units,
                                 ours.attention_units, ours.attention.split("-")[0])
    embedded = keras.layers.Embedding(ours.target_vocab_size, ours.embedding_dim)(target_in)
    zeros = keras.layers.Lambda(lambda h: ops.zeros_like(h))(cell_states[0])
    outputs = keras.layers.RNN(cell, return_sequences=True)(
        embedded, initial_state=[cell_states[0], zeros, memory]
    )
    logits = keras.layers.Dense(ours.target_vocab_size)(outputs)
    return keras.Model({"source": source, "target_in": target_in}, logits)


class EpochTimer(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds = time.perf_counter() - self.start


def throughput(models, x, y, w, batch_size, jit, rounds):
    """Median target tokens/s of each model, timing alternating epochs after a warm-up."""
    timers = {}
    for name, model in models.items():
        T.compile_translator(model, jit_compile=jit)
        timers[name] = EpochTimer()
        model.fit(x, y, sample_weight=w, batch_size=batch_size, epochs=1, verbose=0, shuffle=False)
    seconds = {name: [] for name in models}
    for _ in range(rounds):
        for name, model in models.items():
            model.fit(x, y, sample_weight=w, batch_size=batch_size, epochs=1, verbose=0,
                      callbacks=[timers[name]], shuffle=False)
            seconds[name].append(timers[name].seconds)
    tokens = float(w.sum())
    return {name: tokens / statistics.median(s) for name, s in seconds.items()}


def latency(serve, texts, calls):
    import tensorflow as tf

    batch = tf.constant(texts)
    for _ in range(3):
        serve(text=batch)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        serve(text=batch)["translation"].numpy()
        times.append(time.perf_counter() - start)
    times.sort()
    return 1e3 * times[len(times) // 2], 1e3 * times[min(len(times) - 1, int(0.99 * len(times)))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="batches per timed epoch")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="timed epochs per model")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--output", default=default_path("translator"))
    args = parser.parse_args(argv)
    keras.utils.set_random_seed(0)
    splits = date_splits(train=args.steps * args.batch_size, validation=10, test=100)
    source_vocab = Vocabulary.build([s for s, _ in splits["train"]])
    target_vocab = Vocabulary.build([t for _, t in splits["train"]])
    ls = max(len(s) for s, _ in splits["train"])
    lt = 12
    x = {"source": encode_batch(source_vocab, [s for s, _ in splits["train"]], ls)}
    y_full = encode_batch(target_vocab, [t for _, t in splits["train"]], lt, add_start_end=True)
    x["target_in"], y = y_full[:, :-1], y_full[:, 1:]
    w = (y != 0).astype("float32")

    rows = []
    print(f"training throughput, target tokens/s (batch {args.batch_size}, {args.steps} steps, "
          f"median of {args.rounds} alternating epochs)")
    print(f"{'attention':<15}{'jit':<7}{'ours':>10}{'baseline':>10}{'ratio':>8}")
    for attention in ("bahdanau", "luong-general"):
        for jit in (False, True):
            ours = T.Translator(len(source_vocab), len(target_vocab), attention=attention)
            rates = throughput(
                {"ours": ours, "baseline": baseline_model(ours)},
                x, y, w, args.batch_size, jit, args.rounds,
            )
            ours, base = rates["ours"], rates["baseline"]
            rows.append({"attention": attention, "jit_compile": jit, "ours_tokens_per_s": ours,
                         "baseline_tokens_per_s": base, "ratio": ours / base})
            print(f"{attention:<15}{str(jit):<7}{ours:>10.0f}{base:>10.0f}{ours / base:>8.2f}")

    import tensorflow as tf

    from keras_attn.training.export import write_version
    from keras_attn.training.tasks.translator.export import archive

    model = T.Translator(len(source_vocab), len(target_vocab))
    texts = [s for s, _ in splits["test"]]
    latencies = []
    print(f"\nSavedModel latency, ms (p50 / p99 over {args.calls} calls)")
    with tempfile.TemporaryDirectory() as root:
        for beam in (1, 4):
            settings = {"max_source_length": ls, "max_target_length": lt, "beam_width": beam,
                        "length_penalty": 0.0, "preprocess": {"level": "char"}, "kind": "dates"}
            path = write_version(os.path.join(root, f"beam{beam}"),
                                 archive(model, source_vocab, target_vocab, settings))
            serve = tf.saved_model.load(path).signatures["serving_default"]
            for batch in (1, 64):
                p50, p99 = latency(serve, (texts * 64)[:batch], args.calls)
                latencies.append({"beam_width": beam, "batch": batch, "p50_ms": p50, "p99_ms": p99})
                print(f"  {'greedy' if beam == 1 else 'beam 4':<7} batch {batch:>2}: "
                      f"{p50:7.1f} / {p99:7.1f}")
    result = {"benchmark": "translator", "keras": keras.__version__, "tensorflow": tf.__version__,
              "cpus": os.cpu_count(), "config": vars(args), "throughput": rows,
              "latency": latencies}
    return write_results(result, args.output)


if __name__ == "__main__":
    main()
