"""The translator on real language: TensorFlow's NMT tutorial model against ours.

    python benchmarks/translator_real.py --data ../shared/data/spa-eng/spa.txt

The corpus is the Anki/Tatoeba Spanish–English file of TensorFlow's "Neural
machine translation with attention" tutorial (`English<TAB>Spanish`). Its lines
are shuffled with `numpy.random.default_rng(0).permutation`; the first 5,000
are the test set, the rest go to the translator task as `--data` would take
them (`--reverse`: Spanish → English), which splits them into training,
validation and test pairs by source sentence. All systems train on the task's
training split, and every figure is on the 5,000 held-out pairs:

* (a) `tutorial`: the tutorial's architecture and text processing
  (`benchmarks/nmt_tutorial.py`);
* (b) `rnn`: `keras-attn train translator --data` with its defaults;
* (c) `transformer`: the same with `--model transformer`.

They train for the same `--steps` at the same `--batch-size`, in alternation:
each system runs `--chunk` steps (`train_on_batch`) in turn, so a machine that
slows down slows all of them alike. The clock counts training steps only
(tracing and compilation included, making batches not). Scores are against the
raw English references, on each system's own detokenised output, as the field
reports them: sacreBLEU's default BLEU (case-sensitive, 13a) and chrF first, the
lower-cased BLEU beside them, the share of outputs holding `[UNK]`, and BLEU with
both sides through the tutorial's own text processing (lower case, ASCII letters
and `.?!,¿` only: the tutorial cannot write "I'm" or "10", so this column
separates model quality from text processing). Greedy at `--eval-at` steps on
the first `--curve-size` test pairs (the curve), then greedy and beam search on
all of them; each system's padded share of its training batches' positions is
reported beside its speed (our batches are bucketed by length, the tutorial's
are not). With `--decode-lengths`, the
Transformer's decoding with key/value caches is timed against decoding without
them, per sentence, at fixed output lengths.

Prints the figures and writes JSON (`--output`).
"""

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import keras_attn.training  # noqa: E402, F401, I001  (its TensorFlow settings, before Keras starts TensorFlow)

import keras  # noqa: E402
import numpy as np  # noqa: E402
import sacrebleu  # noqa: E402
from keras import ops  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nmt_tutorial  # noqa: E402
from results_io import default_path, write_results  # noqa: E402

from keras_attn import decoding  # noqa: E402
from keras_attn.models.translator import compile_translator, initialize_output_bias  # noqa: E402
from keras_attn.models.translator.transformer import TransformerTranslator  # noqa: E402
from keras_attn.training import cli  # noqa: E402
from keras_attn.training.runner import model_config  # noqa: E402
from keras_attn.training.tasks.translator import data as tdata  # noqa: E402
from keras_attn.training.tasks.translator import modeling  # noqa: E402
from keras_attn.training.tasks.translator.decoding import translate_texts  # noqa: E402
from keras_attn.training.tasks.translator.parallel import normalize_text  # noqa: E402

SYSTEMS = ("tutorial", "rnn", "transformer")


def split_corpus(path, test_size=5000, seed=0):
    """`(train_lines, test_pairs)`: the issue's split of the tutorial's file, with
    test pairs as `(spanish, english)`."""
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    order = np.random.default_rng(seed).permutation(len(lines))
    test = [lines[i].split("\t") for i in order[:test_size]]
    return [lines[i] for i in order[test_size:]], [(f[1], f[0]) for f in test]


class Stream:
    """The batches of a reshuffling `dataset`, epoch after epoch, by global step
    (read in order, as `fit` reads a `PyDataset` without workers)."""

    def __init__(self, dataset):
        self.dataset, self.epoch = dataset, 0

    def __getitem__(self, step):
        epoch, index = divmod(step, len(self.dataset))
        while self.epoch < epoch:
            self.dataset.on_epoch_end()
            self.epoch += 1
        return self.dataset[index]


class System:
    """A model, its batches and its translate function, trained chunk by chunk."""

    def __init__(self, name, model, batches, translate, tokens_per_batch):
        self.name, self.model, self.translate = name, model, translate
        self.stream, self.tokens_per_batch = Stream(batches), tokens_per_batch
        self.steps, self.seconds, self.tokens, self.curve = 0, 0.0, 0, []
        self.positions = 0  # source and target positions of the batches, padding included

    def train(self, count):
        """`count` steps of `train_on_batch` (the batches are made off the clock)."""
        batches = [self.stream[self.steps + i] for i in range(count)]
        begin = time.perf_counter()
        for x, y, weights in batches:
            self.model.train_on_batch(x, y, sample_weight=weights)
        self.seconds += time.perf_counter() - begin
        self.tokens += sum(self.tokens_per_batch(batch) for batch in batches)
        self.positions += sum(x["source"].size + y.size for x, y, _ in batches)
        self.steps += count


def real_tokens(batch):
    inputs, _, weights = batch
    return int(np.count_nonzero(inputs["source"]) + weights.sum())


def text_scores(hypotheses, references):
    """The figures of `hypotheses` against raw `references`, as the field reports
    them: sacreBLEU's default BLEU (case-sensitive, 13a) and chrF; the lower-cased
    BLEU; the share of outputs holding `[UNK]`; the share entirely lower-case where
    the reference is not; and BLEU with both sides through the tutorial's text
    processing (`nmt_tutorial.standardize`: lower case, ASCII letters and
    `.?!,¿` only), which scores every system on the tutorial's terms."""
    cased = [h for h, r in zip(hypotheses, references, strict=True) if r != r.lower()]
    return {
        "bleu": sacrebleu.corpus_bleu(hypotheses, [references], force=True).score,
        "chrf": sacrebleu.corpus_chrf(hypotheses, [references]).score,
        "bleu_lowercase": sacrebleu.corpus_bleu(hypotheses, [references],
                                                lowercase=True).score,
        "unk_share": float(np.mean(["[UNK]" in h for h in hypotheses])),
        "lowercase_share": float(np.mean([h == h.lower() for h in cased])) if cased else 0.0,
        # force: the tutorial's processing leaves tokenised text, scored as it is.
        "bleu_tutorial_processing": sacrebleu.corpus_bleu(
            [nmt_tutorial.standardize(h) for h in hypotheses],
            [[nmt_tutorial.standardize(r) for r in references]], force=True).score,
    }


def bleu_chrf(hypotheses, references):
    """The curve's figures: sacreBLEU's default (cased) BLEU and chrF."""
    # force: the tutorial's output is tokenised text by its design; it is scored as it is.
    return (sacrebleu.corpus_bleu(hypotheses, [references], force=True).score,
            sacrebleu.corpus_chrf(hypotheses, [references]).score)


def tutorial_system(train_pairs, batch_size, seed):
    sources = [nmt_tutorial.standardize(s) for s, _ in train_pairs]
    targets = [nmt_tutorial.standardize(t) for _, t in train_pairs]
    source_vocab = nmt_tutorial.TutorialVocabulary(sources)
    target_vocab = nmt_tutorial.TutorialVocabulary(targets)
    keras.utils.set_random_seed(seed)
    model = nmt_tutorial.build(len(source_vocab), len(target_vocab))
    batches = nmt_tutorial.Batches(
        [source_vocab.encode(s) for s in sources], [target_vocab.encode(t) for t in targets],
        target_vocab.start, target_vocab.end, batch_size, seed=seed,
    )

    def translate(texts, beam_width=1):
        out = []
        for start in range(0, len(texts), 250):
            chunk = [source_vocab.encode(nmt_tutorial.standardize(t)) for t in
                     texts[start : start + 250]]
            ids = np.zeros((len(chunk), max(1, max(map(len, chunk)))), "int32")
            for row, encoded in enumerate(chunk):
                ids[row, : len(encoded)] = encoded
            out += nmt_tutorial.translate(model, ids, target_vocab, beam_width=beam_width)
        return out

    return System("tutorial", model, batches, translate, real_tokens)


def our_system(name, data, task_args, steps, seed):
    keras.utils.set_random_seed(seed)
    model = modeling.build_model(task_args, data)
    initialize_output_bias(model, tdata.target_token_counts(data))
    batches, _ = tdata.datasets(data, task_args.batch_size, seed, task_args.sort_window)
    # What a cosine schedule would span.
    task_args = dataclasses.replace(task_args, epochs=-(-steps // len(batches)))
    compile_translator(model, learning_rate=modeling.learning_rate(task_args, len(batches)),
                       jit_compile=True if task_args.jit else "auto")
    meta = modeling.run_settings(task_args, data)
    preprocess = data.preprocess

    def translate(texts, beam_width=1):
        prepared = [normalize_text(t, lowercase=preprocess["lowercase"],
                                   space_punctuation=preprocess["space_punctuation"])
                    for t in texts]
        return translate_texts(model, data.source_vocab, data.target_vocab, meta,
                                    prepared, beam_width)

    return System(name, model, batches, translate, real_tokens)


def compiled(function):
    """`function` as the backend compiles a graph: `tf.function` or `jax.jit`."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        # No autograph: the decoders' Python loops are unrolled on purpose, and
        # autograph's rewrite of Keras layer calls breaks `compute_cache`.
        return tf.function(function, autograph=False)
    if keras.backend.backend() == "jax":
        import jax

        return jax.jit(function)
    return function


def decode_times(task_args, data, lengths, batch_size, repeats=3):
    """Seconds per sentence of compiled greedy decoding with and without key/value
    caches, forced to each output length (a model of the Transformer's sizes with
    random weights: the time does not depend on what it has learnt)."""
    model = TransformerTranslator(
        source_vocab_size=len(data.source_vocab), target_vocab_size=len(data.target_vocab),
        max_target_length=max(lengths) + 1,
        model_dim=task_args.model_dim, num_heads=task_args.num_heads,
        num_layers=task_args.num_layers, feedforward_dim=task_args.feedforward_dim,
        rope_max_wavelength=task_args.rope_max_wavelength or None,
    )
    encoder, decoder = model.get_layer("encoder"), model.get_layer("decoder")
    source = np.random.default_rng(0).integers(4, len(data.source_vocab),
                                               (batch_size, 16)).astype("int32")
    never = len(data.target_vocab)  # an end token no step emits: every length is forced

    def decoder_for(step, initial, length):
        def run(source):
            memory, mask = encoder(source)
            out = decoding.greedy_decode(step, initial(memory, mask), batch_size, length,
                                         start_token=2, end_token=never, alignment_length=16)
            return out["tokens"]

        return compiled(run)

    rows = []
    for length in lengths:
        row = {"output_length": length, "batch_size": batch_size}
        for label, step, initial in (("cached", decoder.step, decoder.initial_states),
                                     ("recomputed", decoder.step_recomputed,
                                      decoder.initial_states_recomputed)):
            function = decoder_for(step, initial, length)

            def run(function=function):
                return ops.convert_to_numpy(function(source))

            run()  # traces and warms up
            times = []
            for _ in range(repeats):
                begin = time.perf_counter()
                run()
                times.append(time.perf_counter() - begin)
            row[f"{label}_seconds_per_sentence"] = float(np.median(times)) / batch_size
        row["speedup"] = row["recomputed_seconds_per_sentence"] / row["cached_seconds_per_sentence"]
        rows.append(row)
        print(f"  decode {length:>3} tokens: cached {1000 * row['cached_seconds_per_sentence']:.2f}"
              f" ms/sentence, recomputed {1000 * row['recomputed_seconds_per_sentence']:.2f}, "
              f"{row['speedup']:.2f}×", flush=True)
    return rows


def export_only(args):
    """`--write-train`: the training file; `--score-export`: an export's figures."""
    train_lines, test = split_corpus(args.data, args.test_size)
    if args.write_train:
        with open(args.write_train, "w", encoding="utf-8") as f:
            f.write("\n".join(train_lines) + "\n")
        print(f"wrote {len(train_lines)} training lines to {args.write_train}")
        return None
    import tensorflow as tf

    version = cli.resolve_version_dir(args.score_export, argparse.ArgumentParser())
    signature = tf.saved_model.load(version).signatures["serving_default"]
    sources, references = [s for s, _ in test], [t for _, t in test]
    start, hypotheses = time.time(), []
    for i in range(0, len(sources), 256):
        out = signature(text=tf.constant(sources[i:i + 256]))
        hypotheses += [t.decode("utf-8") for t in out["translation"].numpy()]
    seconds = time.time() - start
    result = {"export": version, "pairs": len(hypotheses), "seconds": seconds,
              **text_scores(hypotheses, references),
              "samples": [list(x) for x in zip(sources[:5], hypotheses[:5], strict=True)],
              "command": " ".join(["python", "benchmarks/translator_real.py", *sys.argv[1:]])}
    # What ran: the export's own record of its model, settings, data and training.
    with open(os.path.join(version, "assets.extra", "meta.json"), encoding="utf-8") as f:
        meta = json.load(f)
    result["run"] = {key: meta.get(key) for key in ("name", "config", "settings", "data",
                                                    "training")}
    print(f"{version}: {len(hypotheses)} test pairs through the SavedModel in {seconds:.0f} s:")
    print(f"  BLEU {result['bleu']:.2f} (sacreBLEU's default: cased, 13a), chrF "
          f"{result['chrf']:.2f}; lower-cased BLEU {result['bleu_lowercase']:.2f}; "
          f"[UNK] in {100 * result['unk_share']:.2f} % of outputs; all lower-case where the "
          f"reference is not: {100 * result['lowercase_share']:.2f} %; both through the "
          f"tutorial's text processing: BLEU {result['bleu_tutorial_processing']:.2f}")
    for source, hypothesis in result["samples"]:
        print(f"  {source!r} → {hypothesis!r}")
    return write_results(result, args.output or default_path("translator_export"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the tutorial's spa.txt")
    parser.add_argument("--steps", type=int, default=1424)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--chunk", type=int, default=89, help="steps each system runs in turn")
    parser.add_argument("--eval-at", default="356,712,1068,1424",
                        help="steps at which the curve's greedy BLEU is measured")
    parser.add_argument("--curve-size", type=int, default=1000)
    parser.add_argument("--test-size", type=int, default=5000)
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--decode-lengths", default="16,32,64",
                        help="output lengths of the cached-decoding timing ('' to skip)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", help="JSON path (default: benchmarks/results/"
                        "translator_real.json, or translator_export.json with --score-export)")
    parser.add_argument("--write-train", metavar="PATH",
                        help="write the training lines (the file a user gives --data) and stop")
    parser.add_argument("--score-export", metavar="MODEL_DIR",
                        help="score an export of `keras-attn train translator --data` on the "
                        "test pairs through its SavedModel signature, and stop")
    args = parser.parse_args(argv)
    if args.write_train or args.score_export:
        return export_only(args)
    args.output = args.output or default_path("translator_real")
    systems = args.systems.split(",")
    if set(systems) - set(SYSTEMS):
        parser.error(f"--systems: expected names from {SYSTEMS}; received {args.systems!r}")
    eval_at = sorted({int(s) for s in args.eval_at.split(",") if s} | {args.steps})
    if args.chunk < 1 or any(s % args.chunk and s != args.steps for s in eval_at):
        parser.error("--eval-at steps must be multiples of --chunk")

    train_lines, test = split_corpus(args.data, args.test_size)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.tsv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(train_lines) + "\n")
        task_args = {
            name: cli.task_options(
                ["train", "translator", "--data", path, "--reverse", "--model", name,
                 "--batch-size", str(args.batch_size), "--seed", str(args.seed)])
            for name in ("rnn", "transformer")
        }
        data = tdata.load_data(task_args["rnn"])
    train_pairs = data.splits["train"]
    print(f"{len(train_pairs)} training pairs, {len(test)} test pairs; backend "
          f"{keras.backend.backend()}, {os.cpu_count()} CPUs", flush=True)

    runners = []
    for name in systems:
        if name == "tutorial":
            runners.append(tutorial_system(train_pairs, args.batch_size, args.seed))
        else:
            runners.append(our_system(name, data, task_args[name], args.steps, args.seed))
    for runner in runners:
        parameters = sum(int(np.prod(v.shape)) for v in runner.model.trainable_weights)
        print(f"  {runner.name}: {parameters:,} parameters", flush=True)
        runner.parameters = parameters

    sources, references = [s for s, _ in test], [t for _, t in test]
    curve_sources, curve_references = sources[: args.curve_size], references[: args.curve_size]
    while runners[0].steps < args.steps:
        count = min(args.chunk, args.steps - runners[0].steps)
        for runner in runners:
            runner.train(count)
        step = runners[0].steps
        if step in eval_at:
            for runner in runners:
                bleu, chrf = bleu_chrf(runner.translate(curve_sources), curve_references)
                runner.curve.append({"steps": step, "train_seconds": runner.seconds,
                                     "bleu": bleu, "chrf": chrf})
                print(f"  {step:>5} steps  {runner.name:<12} {runner.seconds:7.1f} s  "
                      f"BLEU {bleu:6.2f}  chrF {chrf:6.2f}", flush=True)

    results = []
    for runner in runners:
        # The model's own arguments, so a description on the page can be checked
        # against what ran (the tutorial's model is a plain functional one: none).
        row = {"system": runner.name, "model": model_config(runner.model),
               "parameters": runner.parameters, "steps": runner.steps,
               "train_seconds": runner.seconds, "seconds_per_step": runner.seconds / runner.steps,
               "steps_per_second": runner.steps / runner.seconds,
               "tokens_per_second": runner.tokens / runner.seconds, "curve": runner.curve}
        for width in sorted({1, args.beam_width}):
            begin = time.perf_counter()
            hypotheses = runner.translate(sources, width)
            label = "greedy" if width == 1 else f"beam{width}"
            row.update({f"{label}_{k}": v for k, v in
                        text_scores(hypotheses, references).items()})
            row[f"{label}_decode_seconds"] = time.perf_counter() - begin
        row["padding_share"] = 1.0 - runner.tokens / runner.positions
        row["samples"] = [{"source": s, "reference": r, "translation": h} for s, r, h in
                          zip(sources[:5], references[:5], runner.translate(sources[:5]),
                              strict=True)]
        results.append(row)

    tutorial = next((r for r in results if r["system"] == "tutorial"), None)
    print(f"\n{args.steps} steps at batch {args.batch_size}, {len(test)} held-out pairs "
          f"(backend {keras.backend.backend()}, {os.cpu_count()} CPUs)")
    print("BLEU is sacreBLEU's default (cased, 13a); 'lc' lower-cased; 'tut.' both sides "
          "through the tutorial's text processing; pad: padded share of the batches' positions")
    print(f"{'system':<12}{'params':>11}{'s/step':>8}{'vs tut.':>8}{'tok/s':>8}{'pad':>6}"
          f"{'BLEU':>7}{'chrF':>7}{'lc':>7}{'tut.':>7}{'[UNK]':>7}"
          f"{f'BLEU b{args.beam_width}':>9}{'tut. b' + str(args.beam_width):>9}")
    beam = f"beam{args.beam_width}"
    for row in results:
        ratio = row["seconds_per_step"] / tutorial["seconds_per_step"] if tutorial else float("nan")
        row["seconds_per_step_vs_tutorial"] = ratio
        print(f"{row['system']:<12}{row['parameters']:>11,}{row['seconds_per_step']:>8.3f}"
              f"{ratio:>8.2f}{row['tokens_per_second']:>8.0f}{100 * row['padding_share']:>5.0f}%"
              f"{row['greedy_bleu']:>7.2f}{row['greedy_chrf']:>7.2f}"
              f"{row['greedy_bleu_lowercase']:>7.2f}{row['greedy_bleu_tutorial_processing']:>7.2f}"
              f"{100 * row['greedy_unk_share']:>6.1f}%"
              f"{row.get(beam + '_bleu', float('nan')):>9.2f}"
              f"{row.get(beam + '_bleu_tutorial_processing', float('nan')):>9.2f}")

    decode = []
    lengths = [int(x) for x in args.decode_lengths.split(",") if x]
    if lengths:
        print("\nTransformer decoding, key/value caches vs recomputing the stack "
              "(random weights, forced lengths, batch 1):")
        decode = decode_times(task_args["transformer"], data, lengths, batch_size=1)
    result = {
        "benchmark": "translator_real",
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "cpus": os.cpu_count(),
        "config": vars(args),
        "train_pairs": len(train_pairs),
        "test_pairs": len(test),
        "systems": results,
        "decode": decode,
    }
    return write_results(result, args.output)


if __name__ == "__main__":
    main()
