"""The `translator` task: data, training, evaluation and export of `models.translator`
(`--model rnn`, the default) and `models.transformer` (`--model transformer`).

Default data: the built-in date corpus (`training.data.dates`), character level.
`--data PATH.tsv` trains on tab-separated parallel text instead.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from training.arguments import (
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
)
from training.text import Vocabulary, encode_batch

DEFAULT_EXPORT_ROOT = "saved_models"
# `--model` → the export's (and default run folder's) name.
EXPORT_NAMES = {"rnn": "translator", "transformer": "transformer"}
DEFAULT_LEARNING_RATE = 3e-3  # the RNN's rate, and the peak of the Transformer's schedule


def add_arguments(parser):
    data = parser.add_argument_group("data")
    data.add_argument("--data", help="tab-separated parallel text (source<TAB>target[<TAB>…])")
    data.add_argument("--reverse", action="store_true", help="translate column 2 → column 1")
    data.add_argument("--level", choices=("char", "word"), default="char")
    data.add_argument("--lowercase", action="store_true")
    data.add_argument("--space-punctuation", action="store_true")
    data.add_argument("--max-pairs", type=positive_int)
    data.add_argument("--max-length", type=positive_int,
                      help="skip pairs longer than this (characters)")
    data.add_argument(
        "--train-size", type=positive_int, default=20000, help="built-in dates: training pairs"
    )
    data.add_argument("--test-size", type=positive_int,
                      default=2000, help="built-in dates: test pairs")
    data.add_argument("--seed", type=non_negative_int, default=0)
    model = parser.add_argument_group("model")
    model.add_argument(
        "--model",
        choices=tuple(EXPORT_NAMES),
        default="rnn",
        help="rnn: bidirectional-RNN encoder, attention decoder (models.translator); "
        "transformer: models.transformer",
    )
    model.add_argument(
        "--attention",
        # models.translator.ATTENTIONS; not imported here, since that imports Keras
        # before `--backend` has been read.
        choices=("bahdanau", "luong-dot", "luong-general", "luong-concat", "bahdanau-monotonic"),
        default="bahdanau",
    )
    model.add_argument("--rnn", choices=("gru", "lstm"), default="gru")
    model.add_argument("--embedding-dim", type=positive_int, default=64)
    model.add_argument("--encoder-units", type=positive_int, default=64)
    model.add_argument("--decoder-units", type=positive_int, default=128)
    model.add_argument("--attention-units", type=positive_int, default=128)
    transformer = parser.add_argument_group("transformer (--model transformer)")
    transformer.add_argument("--model-dim", type=positive_int, default=64)
    transformer.add_argument("--num-heads", type=positive_int, default=4)
    transformer.add_argument("--num-layers", type=positive_int, default=1)
    transformer.add_argument("--feedforward-dim", type=positive_int, default=256)
    transformer.add_argument("--dropout", type=probability, default=0.0)
    transformer.add_argument(
        "--max-wavelength",
        type=positive_float,
        default=10000.0,
        help="longest wavelength of the sinusoidal positions (the paper's)",
    )
    transformer.add_argument(
        "--rope-max-wavelength",
        type=non_negative_float,
        default=10000.0,
        help="rotary position embedding in every attention (0: off); see the README's "
        "Transformer results for what it changed",
    )
    transformer.add_argument(
        "--warmup-steps",
        type=non_negative_int,
        default=100,
        help="the learning rate rises linearly over these steps, then follows --schedule",
    )
    transformer.add_argument(
        "--schedule",
        choices=("inverse-sqrt", "cosine", "constant"),
        default="inverse-sqrt",
        help="after the warm-up: the paper's decay with the inverse square root of the "
        "step, a cosine to zero at the last step, or none (constant; no warm-up either)",
    )
    fit = parser.add_argument_group("training")
    fit.add_argument("--epochs", type=positive_int, default=3)
    fit.add_argument("--batch-size", type=positive_int, default=64)
    fit.add_argument(
        "--learning-rate",
        type=positive_float,
        help="default 3e-3; for the transformer, the peak of its schedule (--schedule)",
    )
    fit.add_argument(
        "--jit",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="model.compile(jit_compile=True); off by default: on TF/CPU the "
        "decoder's while loop runs faster without XLA (benchmarks/translator.py)",
    )
    fit.add_argument("--mixed-precision", action="store_true", help="mixed_float16 policy")
    fit.add_argument(
        "--tensorboard",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="TensorBoard logs (default: on with the TF backend)",
    )
    out = parser.add_argument_group("decoding and output")
    out.add_argument("--beam-width", type=positive_int, default=4, help="beam width of the export")
    out.add_argument("--length-penalty", type=non_negative_float, default=0.0, help="GNMT α")
    out.add_argument(
        "--output-dir",
        default=DEFAULT_EXPORT_ROOT,
        help="export root: writes OUTPUT_DIR/translator/<next version>/ "
        "(OUTPUT_DIR/transformer/… with --model transformer)",
    )
    out.add_argument(
        "--work-dir",
        help="checkpoints (resume after a kill), logs, vocabularies "
        "(default: runs/translator, or runs/transformer)",
    )
    out.add_argument("--no-export", action="store_true")


# -- data -------------------------------------------------------------------------
def load_data(args):
    """Splits, vocabularies, lengths and preprocessing options for this run."""
    if args.data:
        from training.data.parallel import load_parallel_tsv, split_pairs

        try:
            pairs, report = load_parallel_tsv(
                args.data,
                reverse=args.reverse,
                max_pairs=args.max_pairs,
                max_length=args.max_length,
                lowercase=args.lowercase,
                space_punctuation=args.space_punctuation,
            )
        except ValueError as error:  # not UTF-8: the file and line, without a traceback
            raise SystemExit(str(error)) from None
        print(f"{args.data}: {report.summary()}")
        if report.bad_lines:
            print(f"  malformed lines (first {len(report.bad_lines)}): {report.bad_lines}")
        if len(pairs) < 10:
            raise SystemExit(f"{args.data}: only {len(pairs)} usable pairs")
        splits = split_pairs(pairs, seed=args.seed)
        kind, level = "text", args.level
    else:
        from training.data.dates import date_splits

        splits = date_splits(
            train=args.train_size, validation=1000, test=args.test_size, seed=args.seed
        )
        kind, level = "dates", "char"
    preprocess = {
        "level": level,
        "lowercase": bool(args.data and args.lowercase),
        "space_punctuation": bool(args.data and args.space_punctuation),
        "collapse_whitespace": bool(args.data),
    }
    train = splits["train"]
    source_vocab = Vocabulary.build([s for s, _ in train], level)
    target_vocab = Vocabulary.build([t for _, t in train], level)
    max_source = max(len(source_vocab.encode(s)) for s, _ in train)
    max_target = max(len(target_vocab.encode(t)) for _, t in train) + 2
    return {
        "kind": kind,
        "splits": splits,
        "source_vocab": source_vocab,
        "target_vocab": target_vocab,
        "max_source_length": max_source,
        "max_target_length": max_target,
        "preprocess": preprocess,
    }


def to_arrays(data, pairs):
    x = encode_batch(data["source_vocab"], [s for s, _ in pairs], data["max_source_length"])
    y = encode_batch(
        data["target_vocab"], [t for _, t in pairs], data["max_target_length"], add_start_end=True
    )
    inputs = {"source": x, "target_in": y[:, :-1]}
    return inputs, y[:, 1:], (y[:, 1:] != 0).astype("float32")


# -- run directory -------------------------------------------------------------------
def save_run(work_dir, model, data, config, args):
    import dataclasses

    model.save(os.path.join(work_dir, "model.keras"))
    data["source_vocab"].save(os.path.join(work_dir, "source_vocab.json"))
    data["target_vocab"].save(os.path.join(work_dir, "target_vocab.json"))
    meta = {
        "task": "translator",
        "model": args.model,
        "kind": data["kind"],
        "config": dataclasses.asdict(config),
        "max_source_length": data["max_source_length"],
        "max_target_length": data["max_target_length"],
        "preprocess": data["preprocess"],
        "beam_width": args.beam_width,
        "length_penalty": args.length_penalty,
    }
    with open(os.path.join(work_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    with open(os.path.join(work_dir, "test.tsv"), "w", encoding="utf-8") as f:
        for source, target in data["splits"]["test"]:
            f.write(f"{source}\t{target}\n")
    return meta


def load_run(run_dir):
    import keras

    import models.transformer  # noqa: F401  (registers the layers of both models)

    with open(os.path.join(run_dir, "meta.json")) as f:
        meta = json.load(f)
    model = keras.saving.load_model(os.path.join(run_dir, "model.keras"), safe_mode=True)
    source_vocab = Vocabulary.load(os.path.join(run_dir, "source_vocab.json"))
    target_vocab = Vocabulary.load(os.path.join(run_dir, "target_vocab.json"))
    return model, source_vocab, target_vocab, meta


# -- decoding and metrics -------------------------------------------------------------
def translate_texts(model, source_vocab, target_vocab, meta, texts, beam_width=1, batch_size=256):
    """In-process translations of already-preprocessed `texts` (a Keras model)."""
    from keras import ops

    from models.translator import generate

    outputs = []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        ids = encode_batch(source_vocab, chunk, meta["max_source_length"])
        out = generate(
            model,
            ids,
            meta["max_target_length"] - 1,
            beam_width=beam_width,
            length_penalty=meta.get("length_penalty", 0.0),
        )
        tokens = ops.convert_to_numpy(out["tokens"])
        for text, row in zip(chunk, tokens, strict=True):
            outputs.append("" if not text else target_vocab.decode(row))
    return outputs


def score(kind, hypotheses, references):
    exact = float(np.mean([h == r for h, r in zip(hypotheses, references, strict=True)]))
    figures = {"exact_match": exact, "n": len(references)}
    if kind == "text":
        import sacrebleu

        figures["bleu"] = sacrebleu.corpus_bleu(hypotheses, [references]).score
        figures["chrf"] = sacrebleu.corpus_chrf(hypotheses, [references]).score
    return figures


def evaluate_run(model, source_vocab, target_vocab, meta, pairs, beam_widths=(1, 4)):
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    results = {}
    for width in beam_widths:
        start = time.time()
        hyps = translate_texts(model, source_vocab, target_vocab, meta, sources, width)
        figures = score(meta["kind"], hyps, references)
        figures["seconds"] = round(time.time() - start, 2)
        results["greedy" if width == 1 else f"beam{width}"] = figures
    return results


def _print_results(results):
    for name, figures in results.items():
        line = f"  {name:<7} exact match {100 * figures['exact_match']:.2f} % (n={figures['n']})"
        if "bleu" in figures:
            line += f", BLEU {figures['bleu']:.2f}, chrF {figures['chrf']:.2f}"
        print(line)


# -- the task's entry points ------------------------------------------------------------
def learning_rate(args, train_size):
    """`--learning-rate` (RNN), or the Transformer's warm-up and decay.

    The Transformer's rate rises linearly over `--warmup-steps` to
    `--learning-rate`, then follows `--schedule`: the inverse square root of the
    step (Vaswani et al. 2017, §5.3; `--warmup-steps 0` starts it at the peak),
    or a cosine that ends at zero on the run's last step; `--schedule constant`
    is `--learning-rate` throughout (README, Transformer results, compares them).
    """
    peak = args.learning_rate or DEFAULT_LEARNING_RATE
    if args.model != "transformer" or args.schedule == "constant":
        return peak
    import keras

    if args.schedule == "inverse-sqrt":
        from models.schedules import InverseSquareRootDecay

        return InverseSquareRootDecay(peak, max(args.warmup_steps, 1))
    total = -(-train_size // args.batch_size) * args.epochs
    warmup = min(args.warmup_steps, total - 1)
    return keras.optimizers.schedules.CosineDecay(
        0.0 if warmup else peak,
        decay_steps=total - warmup,
        warmup_target=peak if warmup else None,
        warmup_steps=warmup,
    )


def build_model(args, data):
    """`(config, model)` of `--model`, sized by the flags and the data."""
    sizes = dict(
        source_vocab_size=len(data["source_vocab"]),
        target_vocab_size=len(data["target_vocab"]),
        max_source_length=data["max_source_length"],
        max_target_length=data["max_target_length"],
    )
    if args.model == "transformer":
        from models.transformer import TransformerConfig, build_transformer

        config = TransformerConfig(
            **sizes,
            model_dim=args.model_dim,
            num_heads=args.num_heads,
            num_layers=args.num_layers,
            feedforward_dim=args.feedforward_dim,
            dropout=args.dropout,
            max_wavelength=args.max_wavelength,
            rope_max_wavelength=args.rope_max_wavelength or None,
        )
        return config, build_transformer(config)
    from models.translator import TranslatorConfig, build_translator

    config = TranslatorConfig(
        **sizes,
        attention=args.attention,
        rnn=args.rnn,
        embedding_dim=args.embedding_dim,
        encoder_units=args.encoder_units,
        decoder_units=args.decoder_units,
        attention_units=args.attention_units,
        attention_layer_size=args.decoder_units,
    )
    return config, build_translator(config)


def train(args):
    import keras

    from models.translator import compile_translator

    if args.work_dir is None:
        args.work_dir = os.path.join("runs", EXPORT_NAMES[args.model])
    if args.mixed_precision:
        keras.config.set_dtype_policy("mixed_float16")
    from training.runtime import set_seed

    set_seed(args.seed)
    data = load_data(args)
    splits = data["splits"]
    print(
        f"data: {data['kind']}, {len(splits['train'])} train / {len(splits['validation'])} "
        f"validation / {len(splits['test'])} test pairs; vocabularies {len(data['source_vocab'])} "
        f"→ {len(data['target_vocab'])} {data['preprocess']['level']}s; lengths "
        f"{data['max_source_length']} → {data['max_target_length']}"
    )
    try:
        config, model = build_model(args, data)
    except ValueError as error:  # sizes that do not fit together: one line, no traceback
        raise SystemExit(f"translator: {error}") from None
    x, y, w = to_arrays(data, splits["train"])
    model = compile_translator(
        model,
        learning_rate=learning_rate(args, len(y)),
        jit_compile=True if args.jit else "auto",
    )
    os.makedirs(args.work_dir, exist_ok=True)
    from training.runtime import run_callbacks

    callbacks = run_callbacks(args.work_dir, args.tensorboard)
    vx, vy, vw = to_arrays(data, splits["validation"])
    start = time.time()
    model.fit(
        x,
        y,
        sample_weight=w,
        validation_data=(vx, vy, vw),
        batch_size=args.batch_size,
        epochs=args.epochs,
        callbacks=callbacks,
        verbose=2 if os.environ.get("CI") or not sys.stdout.isatty() else 1,
    )
    train_seconds = time.time() - start
    meta = save_run(args.work_dir, model, data, config, args)
    results = evaluate_run(
        model,
        data["source_vocab"],
        data["target_vocab"],
        meta,
        splits["test"],
        beam_widths=sorted({1, args.beam_width}),
    )
    print(f"trained {args.epochs} epochs in {train_seconds:.0f} s; held-out test:")
    _print_results(results)
    sample = splits["test"][:5]
    translations = translate_texts(
        model,
        data["source_vocab"],
        data["target_vocab"],
        meta,
        [s for s, _ in sample],
        args.beam_width,
    )
    export_path = None
    if not args.no_export:
        from training.runtime import export_and_report

        export_path = export_and_report("translator", args.work_dir, args.output_dir)
    print("sample translations (held-out):")
    for (source, target), translation in zip(sample, translations, strict=True):
        mark = "✓" if translation == target else "✗"
        print(f"  {source!r} → {translation!r} {mark}")
    return {"results": results, "train_seconds": train_seconds, "export": export_path}


def export(run_dir, export_root):
    from training import export as export_lib

    model, source_vocab, target_vocab, meta = load_run(run_dir)
    name = EXPORT_NAMES[meta.get("model", "rnn")]
    return export_lib.export_translator(
        model, source_vocab, target_vocab, meta, export_root, name, run_dir
    )


def evaluate(args):
    """Figures for a run directory (or an export's version directory) on its test split."""
    from training.data.parallel import load_parallel_tsv

    run_dir = args.run_dir
    model, source_vocab, target_vocab, meta = load_run(run_dir)
    path = args.data or os.path.join(run_dir, "test.tsv")
    # The run's own test split is a TSV too; preprocess either as in training.
    preprocess = meta["preprocess"]
    pairs, report = load_parallel_tsv(
        path,
        lowercase=preprocess["lowercase"],
        space_punctuation=preprocess["space_punctuation"],
    )
    print(f"{path}: {report.summary()}")
    results = evaluate_run(
        model, source_vocab, target_vocab, meta, pairs, beam_widths=sorted({1, args.beam_width})
    )
    print(f"{run_dir} on {path}:")
    _print_results(results)
    return results
