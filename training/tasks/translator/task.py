"""The `translator` task: data, training, figures, export and `predict` of
`keras_attn.models.translator` (`--model rnn`, the default) and
`keras_attn.models.transformer` (`--model transformer`).

Default data: the built-in date corpus (`dates`), character level. `--data
PATH.tsv` trains on tab-separated parallel text instead (`parallel`), with
defaults chosen for real sentences (`PROFILES`).
"""

import argparse
import os
import time
import weakref

import keras
import numpy as np
import sacrebleu

from keras_attn.models.schedules import InverseSquareRootDecay
from keras_attn.models.transformer import TransformerConfig, build_transformer
from keras_attn.models.translator import (
    Generator,
    TranslatorConfig,
    build_translator,
    compile_translator,
    initialize_output_bias,
)
from keras_attn.training.arguments import (
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
)
from keras_attn.training.callbacks import TimeBudget
from keras_attn.training.data.batching import BucketedBatches
from keras_attn.training.task import Task
from keras_attn.training.tasks.translator.dates import date_splits
from keras_attn.training.tasks.translator.parallel import load_parallel_tsv, split_pairs
from keras_attn.training.text import END_ID, UNK, UNK_ID, Vocabulary, detokenize

# `--model` → the model's name (its run and export folders) with the built-in data.
MODEL_NAMES = {"rnn": "translator", "transformer": "transformer"}


DEFAULT_LEARNING_RATE = 3e-3  # the RNN's rate, and the peak of the Transformer's on dates
TEXT_TRANSFORMER_RATE = 1e-3  # the Transformer's peak on real text


# Defaults that depend on the data: the built-in dates (characters, a small model
# that reaches 100 % in a minute) or real sentences with `--data` (words, the
# sizes and budget that beat TensorFlow's tutorial model on its Spanish–English
# corpus: docs/results). A flag given on the command line always wins.
PROFILES = {
    "dates": dict(
        level="char", lowercase=False, space_punctuation=False, max_vocab=None,
        attention="bahdanau", input_feeding=True, sort_window=1, max_tokens=None, epochs=3,
        max_minutes=None, patience=None,
        embedding_dim=64, encoder_units=64,
        decoder_units=128, attention_units=128, model_dim=64, feedforward_dim=256,
        num_layers=1, warmup_steps=100,
    ),
    "text": dict(
        level="subword", lowercase=False, space_punctuation=True, max_vocab="auto",
        attention="luong-general", input_feeding=False, sort_window=50, max_tokens=50,
        epochs=100, max_minutes=30.0, patience=3,
        embedding_dim=256, encoder_units=256,
        decoder_units=256, attention_units=256, model_dim=256, feedforward_dim=1024,
        num_layers=2, warmup_steps=400,
    ),
}


def _profile_help(name):
    dates, text = PROFILES["dates"][name], PROFILES["text"][name]
    return f"default: {dates} for the built-in dates, {text} with --data"


def add_arguments(parser):
    data = parser.add_argument_group("data")
    data.add_argument("--data", help="tab-separated parallel text (source<TAB>target[<TAB>…])")
    data.add_argument("--reverse", action="store_true", help="translate column 2 → column 1")
    data.add_argument("--level", choices=("char", "word", "subword"),
                      help="tokens: characters, space-separated words, or WordPiece pieces "
                      "learnt on the training side; " + _profile_help("level"))
    data.add_argument("--lowercase", action=argparse.BooleanOptionalAction,
                      help=_profile_help("lowercase"))
    data.add_argument("--space-punctuation", action=argparse.BooleanOptionalAction,
                      help="spaces around . ? ! , ¿ ¡ ; : before splitting into words; "
                      + _profile_help("space_punctuation"))
    data.add_argument("--max-vocab", type=positive_int,
                      help="ids of each side's vocabulary, with the 4 specials: the most "
                      "frequent tokens (the rest become [UNK]), or the number of subword "
                      "pieces; " + _profile_help("max_vocab") + " (auto: 8000 a side, "
                      "fewer subword pieces for a small corpus: one per 3 training pairs, at "
                      "least 1000)")
    data.add_argument("--min-count", type=positive_int, default=1,
                      help="keep only tokens seen at least this often in training")
    data.add_argument("--max-tokens", type=positive_int,
                      help="train only on pairs with at most this many tokens a side; "
                      + _profile_help("max_tokens"))
    data.add_argument(
        "--sort-window", type=positive_int,
        help="batches sorted by length together, so that a batch pads little (1: plain "
        "shuffled batches, each padded to its longest; the dates learn faster from "
        "batches of mixed lengths); " + _profile_help("sort_window"))
    data.add_argument("--max-pairs", type=positive_int)
    data.add_argument("--max-length", type=positive_int,
                      help="skip pairs longer than this (characters)")
    data.add_argument(
        "--train-size", type=positive_int, default=20000, help="built-in dates: training pairs"
    )
    data.add_argument("--test-size", type=positive_int,
                      default=2000, help="built-in dates: test pairs")
    model = parser.add_argument_group("model")
    model.add_argument(
        "--model",
        choices=tuple(MODEL_NAMES),
        default="rnn",
        help="rnn: bidirectional-RNN encoder, attention decoder (models.translator); "
        "transformer: models.transformer",
    )
    model.add_argument(
        "--attention",
        # models.translator.ATTENTIONS; not imported here, since that imports Keras
        # before `--backend` has been read.
        choices=("bahdanau", "luong-dot", "luong-general", "luong-concat", "bahdanau-monotonic"),
        help="the score of the decoder's attention; " + _profile_help("attention"),
    )
    model.add_argument("--rnn", choices=("gru", "lstm"), default="gru")
    model.add_argument(
        "--input-feeding", action=argparse.BooleanOptionalAction,
        help="feed the last attention vector into the next step (Luong et al.); without "
        "it, training attends for all steps at once; " + _profile_help("input_feeding"))
    for name in ("embedding_dim", "encoder_units", "decoder_units", "attention_units"):
        model.add_argument("--" + name.replace("_", "-"), type=positive_int,
                           help=_profile_help(name))
    transformer = parser.add_argument_group("transformer (--model transformer)")
    transformer.add_argument("--model-dim", type=positive_int, help=_profile_help("model_dim"))
    transformer.add_argument("--num-heads", type=positive_int, default=4)
    transformer.add_argument("--num-layers", type=positive_int, help=_profile_help("num_layers"))
    transformer.add_argument("--feedforward-dim", type=positive_int,
                             help=_profile_help("feedforward_dim"))
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
        help="the learning rate rises linearly over these steps, then follows --schedule; "
        + _profile_help("warmup_steps"),
    )
    transformer.add_argument(
        "--schedule",
        choices=("inverse-sqrt", "cosine", "constant"),
        default="inverse-sqrt",
        help="after the warm-up: the paper's decay with the inverse square root of the "
        "step, a cosine to zero at the last step, or none (constant; no warm-up either)",
    )
    fit = parser.add_argument_group("training")
    fit.add_argument("--epochs", type=positive_int, help=_profile_help("epochs"))
    fit.add_argument(
        "--max-minutes", type=positive_float,
        help="stop training after this many minutes (at the end of a batch); "
        + _profile_help("max_minutes"),
    )
    fit.add_argument(
        "--patience", type=non_negative_int,
        help="stop when the validation BLEU (exact match for the dates) has not improved "
        "for this many epochs, and keep the best epoch's weights (0: never); "
        + _profile_help("patience"))
    fit.add_argument(
        "--learning-rate",
        type=positive_float,
        help="default 3e-3; for the transformer, the peak of its schedule (--schedule)",
    )
    out = parser.add_argument_group("decoding and output")
    out.add_argument("--beam-width", type=positive_int, default=4, help="beam width of the export")
    out.add_argument("--length-penalty", type=non_negative_float, default=0.0, help="GNMT α")


def resolve_defaults(args):
    """Fills every flag left unset with its profile's value (dates, or text with
    `--data`); returns the profile's name."""
    kind = "text" if args.data else "dates"
    for name, value in PROFILES[kind].items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    return kind


# -- data -------------------------------------------------------------------------
def load_data(args):
    """Splits, vocabularies, lengths and preprocessing options for this run.

    `args` must have been through `resolve_defaults`.
    """
    if args.data:
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
            raise SystemExit(f"{args.data}: only {len(pairs)} usable pairs (at least 10 needed)")
        try:
            splits = split_pairs(pairs, seed=args.seed)
        except ValueError as error:
            raise SystemExit(f"{args.data}: {error}") from None
        kind = "text"
    else:
        splits = date_splits(
            train=args.train_size, validation=1000, test=args.test_size, seed=args.seed
        )
        kind = "dates"
    level = args.level
    preprocess = {
        "level": level,
        "lowercase": bool(args.data and args.lowercase),
        "space_punctuation": bool(args.data and args.space_punctuation),
        "collapse_whitespace": bool(args.data),
    }
    train = splits["train"]
    size = args.max_vocab
    if size == "auto":
        size = vocabulary_size(len(train)) if level == "subword" else 8000
        print(f"  vocabularies of at most {size} {level}s a side (--max-vocab auto, for "
              f"{len(train)} training pairs)")
    source_vocab = Vocabulary.build([s for s, _ in train], level, args.min_count, size)
    target_vocab = Vocabulary.build([t for _, t in train], level, args.min_count, size)
    sources = [source_vocab.encode(s) for s, _ in train]
    targets = [target_vocab.encode(t) for _, t in train]
    if args.max_tokens is not None:
        keep = [max(len(s), len(t)) <= args.max_tokens for s, t in zip(sources, targets,
                                                                         strict=True)]
        if not any(keep):
            raise SystemExit(f"--max-tokens {args.max_tokens}: no training pair is that short")
        if not all(keep):
            print(f"  {keep.count(False)} training pairs longer than --max-tokens "
                  f"{args.max_tokens} left out")
        train = splits["train"] = [p for p, k in zip(train, keep, strict=True) if k]
        sources = [ids for ids, k in zip(sources, keep, strict=True) if k]
        targets = [ids for ids, k in zip(targets, keep, strict=True) if k]
    return {
        "kind": kind,
        "splits": splits,
        "source_vocab": source_vocab,
        "target_vocab": target_vocab,
        "train_ids": (sources, targets),
        "max_source_length": max(map(len, sources)),
        "max_target_length": max(map(len, targets)) + 2,
        "preprocess": preprocess,
    }


def vocabulary_size(train_pairs):
    """`--max-vocab`'s default with `--data`: 8,000 pieces a side, fewer for a small
    corpus (one per 3 training pairs, at least 1,000). Chosen on the runs' own
    validation and test splits of the Spanish–English corpus: with its 91,000
    training pairs, 8,000; with 6,400 (its first 8,000 lines), 2,000 pieces gave
    held-out BLEU 22.49 greedy and 24.00 with beam 4 against 21.44 and 23.20 with
    8,000."""
    return int(min(8000, max(1000, train_pairs // 3)))


def unknown_rates(data, pairs):
    """The share of source and target tokens of `pairs` that map to `[UNK]`."""
    rates = []
    for vocab, texts in ((data["source_vocab"], [s for s, _ in pairs]),
                         (data["target_vocab"], [t for _, t in pairs])):
        ids = [i for text in texts for i in vocab.encode(text)]
        rates.append(sum(i == UNK_ID for i in ids) / max(len(ids), 1))
    return tuple(rates)


def datasets(data, batch_size, seed, sort_window=1):
    """Length-bucketed training batches (reshuffled every epoch) and validation ones."""
    train = BucketedBatches(*data["train_ids"], batch_size, window=sort_window, seed=seed)
    pairs = data["splits"]["validation"]
    source_max, target_max = data["max_source_length"], data["max_target_length"] - 2
    validation = BucketedBatches(
        [data["source_vocab"].encode(s, source_max) for s, _ in pairs],
        [data["target_vocab"].encode(t, target_max) for _, t in pairs],
        batch_size, shuffle=False,
    )
    return train, validation


def target_token_counts(data):
    """How often each target id occurs in training (`[END]` once a sentence)."""
    _, targets = data["train_ids"]
    counts = np.bincount(
        np.fromiter((i for ids in targets for i in ids), "int64"),
        minlength=len(data["target_vocab"]),
    )
    counts[END_ID] += len(targets)
    return counts


# -- decoding and figures ---------------------------------------------------------
# One compiled decoder per model and decoder settings (a new one would compile anew).
_generators = weakref.WeakKeyDictionary()


def generator(model, settings, beam_width):
    """The model's `Generator` for these settings, compiled once and kept."""
    key = (settings["max_target_length"] - 1, beam_width, settings["length_penalty"])
    kept = _generators.setdefault(model, {})
    if key not in kept:
        kept[key] = Generator(model, *key)
    return kept[key]


def translate_texts(model, source_vocab, target_vocab, settings, texts, beam_width=1,
                    batch_size=256):
    """In-process translations of already-preprocessed `texts` (a Keras model);
    `settings` is the run's `RunMeta.settings`.

    The texts are decoded in batches of similar length, each padded to its own
    longest source (at most the trained maximum, as the export truncates), and
    returned in the order given.
    """
    max_source = settings["max_source_length"]
    encoded = [source_vocab.encode(text, max_source) for text in texts]
    order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
    outputs = [""] * len(texts)
    decoder = generator(model, settings, beam_width)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        # Padded to a multiple of 8, as training batches are: fewer shapes to compile.
        width = 8 * -(-max(1, max(len(encoded[i]) for i in rows)) // 8)
        ids = np.zeros((len(rows), width), "int32")
        for row, i in enumerate(rows):
            ids[row, : len(encoded[i])] = encoded[i]
        decoded = keras.ops.convert_to_numpy(decoder.predict_on_batch(ids)["tokens"])
        for i, tokens in zip(rows, decoded, strict=True):
            if texts[i]:
                outputs[i] = detokenize(target_vocab.decode(tokens), settings["preprocess"])
    return outputs


def score(kind, hypotheses, references):
    """Exact match; for text, as the field reports it: sacreBLEU's default BLEU
    (case-sensitive, 13a) and chrF, the lower-cased BLEU beside them, and the
    share of translations holding `[UNK]`."""
    exact = float(np.mean([h == r for h, r in zip(hypotheses, references, strict=True)]))
    figures = {"exact_match": exact, "n": len(references)}
    if kind == "text":
        figures["bleu"] = sacrebleu.corpus_bleu(hypotheses, [references]).score
        figures["chrf"] = sacrebleu.corpus_chrf(hypotheses, [references]).score
        figures["bleu_lowercase"] = sacrebleu.corpus_bleu(hypotheses, [references],
                                                          lowercase=True).score
        figures["unk_share"] = float(np.mean([UNK in h for h in hypotheses]))
    return figures


def text_figures(figures):
    """`BLEU 46.10, chrF 64.20 (lower-cased BLEU 48.30; [UNK] in 0.10 %)`."""
    return (f"BLEU {figures['bleu']:.2f}, chrF {figures['chrf']:.2f} (lower-cased BLEU "
            f"{figures['bleu_lowercase']:.2f}; [UNK] in {100 * figures['unk_share']:.2f} %)")


def evaluate_run(model, source_vocab, target_vocab, settings, pairs, beam_widths=(1, 4)):
    """Exact match (and BLEU/chrF for text) of the translations of `pairs`, whose
    references are compared in the same detokenised form as the translations."""
    sources = [s for s, _ in pairs]
    references = [detokenize(t, settings["preprocess"]) for _, t in pairs]
    results = {}
    for width in beam_widths:
        start = time.time()
        hyps = translate_texts(model, source_vocab, target_vocab, settings, sources, width)
        figures = score(settings["kind"], hyps, references)
        figures["seconds"] = round(time.time() - start, 2)
        results["greedy" if width == 1 else f"beam{width}"] = figures
    return results


# -- model and training -----------------------------------------------------------
def learning_rate(args, steps_per_epoch):
    """`--learning-rate`, with the warm-up and decay of `--schedule`.

    The rate rises linearly over `--warmup-steps` to `--learning-rate`, then
    follows `--schedule`: the inverse square root of the step (Vaswani et al.
    2017, §5.3; `--warmup-steps 0` starts it at the peak), or a cosine that ends
    at zero on the run's last step; `--schedule constant` is `--learning-rate`
    throughout. The RNN on the built-in dates keeps its constant rate (its
    schedule was tuned there; docs/results); on real text both models warm up.
    """
    resolve_defaults(args)
    peak = args.learning_rate or (
        DEFAULT_LEARNING_RATE if args.model == "rnn" or not args.data else TEXT_TRANSFORMER_RATE
    )
    constant_rnn = args.model == "rnn" and not args.data
    if constant_rnn or args.schedule == "constant":
        return peak
    if args.schedule == "inverse-sqrt":
        return InverseSquareRootDecay(peak, max(args.warmup_steps, 1))
    total = steps_per_epoch * args.epochs
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
    config = TranslatorConfig(
        **sizes,
        attention=args.attention,
        rnn=args.rnn,
        embedding_dim=args.embedding_dim,
        encoder_units=args.encoder_units,
        decoder_units=args.decoder_units,
        attention_units=args.attention_units,
        attention_layer_size=args.decoder_units,
        input_feeding=args.input_feeding,
    )
    return config, build_translator(config)


class TranslationProgress(keras.callbacks.Callback):
    """Prints held-out figures and sample translations at the end of every epoch,
    and with `patience` stops when they have not improved for that many epochs.

    The figure is the validation BLEU for text (exact match for the dates), as NMT
    toolkits stop on it: the validation loss bottoms out epochs before the BLEU
    does (on 8,000 Spanish–English pairs its lowest was at epoch 7, validation BLEU
    14.50, while the BLEU rose to 16.79 by epoch 9). When training ends, the best
    epoch's weights are kept.

    Args:
        data: `load_data`'s dict (its validation split is translated).
        settings: the run's `RunMeta.settings`.
        limit: translate at most this many validation pairs.
        samples: how many translations to print.
        patience: epochs without a better figure before stopping (`None`: never).
    """

    def __init__(self, data, settings, limit=500, samples=3, patience=None):
        super().__init__()
        self.data, self.settings, self.limit, self.samples = data, settings, limit, samples
        self.patience = patience
        self.history = []
        self.best = self.best_epoch = self.best_weights = None

    def on_epoch_end(self, epoch, logs=None):
        pairs = self.data["splits"]["validation"][: self.limit]
        if not pairs:
            return
        sources = [s for s, _ in pairs]
        references = [detokenize(t, self.settings["preprocess"]) for _, t in pairs]
        hyps = translate_texts(self.model, self.data["source_vocab"],
                               self.data["target_vocab"], self.settings, sources)
        figures = score(self.settings["kind"], hyps, references)
        self.history.append({"epoch": epoch + 1, **figures})
        line = f"epoch {epoch + 1}: validation (n={figures['n']}, greedy)"
        if "bleu" in figures:
            line += " " + text_figures(figures)
        else:
            line += f" exact match {100 * figures['exact_match']:.2f} %"
        print(line)
        for source, hyp, ref in list(zip(sources, hyps, references, strict=True))[: self.samples]:
            print(f"  {source!r} → {hyp!r} (reference {ref!r})")
        figure = figures.get("bleu", figures["exact_match"])
        if self.best is None or figure > self.best:
            self.best, self.best_epoch = figure, epoch + 1
            if self.patience:
                self.best_weights = self.model.get_weights()
        elif self.patience and epoch + 1 - self.best_epoch >= self.patience:
            print(f"no better validation figure for {self.patience} epochs: stopping")
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        last = self.history[-1]["epoch"] if self.history else None
        if self.best_weights is not None and last != self.best_epoch:
            print(f"keeping epoch {self.best_epoch}'s weights (the best validation figure)")
            self.model.set_weights(self.best_weights)


def run_settings(args, data):
    """`RunMeta.settings`: what decoding, evaluating and exporting need."""
    return {
        "model": args.model,
        "kind": data["kind"],
        "max_source_length": data["max_source_length"],
        "max_target_length": data["max_target_length"],
        "preprocess": data["preprocess"],
        "beam_width": args.beam_width,
        "length_penalty": args.length_penalty,
    }


class TranslatorTask(Task):
    name = "translator"
    summary = "seq2seq translator with Bahdanau/Luong attention (default: dates → ISO)"
    batch_size = 64
    assets = ("source_vocab.json", "target_vocab.json", "test.tsv")

    def add_arguments(self, parser):
        add_arguments(parser)

    def add_evaluate_arguments(self, parser):
        parser.add_argument("--data", help="a TSV to evaluate on instead of the run's test split")
        parser.add_argument("--beam-width", type=positive_int, default=4)

    def jit_default(self, backend):
        # On TF/CPU the decoder's while loop runs faster without XLA
        # (benchmarks/translator.py); JAX compiles every step anyway.
        return backend == "jax"

    def data_source(self, args):
        if not args.data:
            return {"source": "built-in", "train_size": args.train_size,
                    "test_size": args.test_size}
        if os.path.isdir(args.data):
            raise SystemExit(f"--data: {args.data!r} is a folder; expected a TSV file")
        return {"source": "file", "path": os.path.abspath(args.data), "reverse": args.reverse}

    def base_name(self, args):
        return MODEL_NAMES[args.model]

    def prepare(self, args):
        kind = resolve_defaults(args)
        data = load_data(args)
        splits = data["splits"]
        print(
            f"data: {data['kind']}, {len(splits['train'])} train / {len(splits['validation'])} "
            f"validation / {len(splits['test'])} test pairs; vocabularies "
            f"{len(data['source_vocab'])} → {len(data['target_vocab'])} "
            f"{data['preprocess']['level']}s; lengths {data['max_source_length']} → "
            f"{data['max_target_length']}"
        )
        if kind == "text":
            unknown_source, unknown_target = unknown_rates(data, splits["validation"])
            print(f"  [UNK] in validation: {100 * unknown_source:.2f} % of source and "
                  f"{100 * unknown_target:.2f} % of target tokens")
            if unknown_source > 0.5:
                print("  (the splits share no source sentence, so a validation sentence's "
                      "words are known only if other training sentences use them; a corpus "
                      "this small, or of single words, shares few)")
        data["batches"] = datasets(data, args.batch_size, args.seed, args.sort_window)
        return data

    def build_model(self, args, data, jit_compile):
        try:
            config, model = build_model(args, data)
        except ValueError as error:  # sizes that do not fit together: one line, no traceback
            raise SystemExit(f"translator: {error}") from None
        initialize_output_bias(model, target_token_counts(data))
        train_batches, _ = data["batches"]
        return config, compile_translator(
            model, learning_rate=learning_rate(args, len(train_batches)),
            jit_compile=jit_compile,
        )

    def callbacks(self, model, data, args):
        callbacks = [TranslationProgress(data, run_settings(args, data),
                                         patience=args.patience or None)]
        if args.max_minutes:
            callbacks.append(TimeBudget(args.max_minutes * 60))
        return callbacks

    def fit_arguments(self, model, data, args):
        train, validation = data["batches"]
        print(f"training: {len(train)} batches an epoch "
              f"({100 * train.padding_fraction():.0f} % padding), at most {args.epochs} "
              "epochs" + (f" or {args.max_minutes:g} minutes" if args.max_minutes else "")
              + (f", or {args.patience} without a better validation figure" if args.patience
                 else ""))
        return {"x": train, "validation_data": validation, "epochs": args.epochs}

    def settings(self, args, data, config):
        return run_settings(args, data)

    def save_assets(self, run_dir, data, meta):
        data["source_vocab"].save(os.path.join(run_dir, "source_vocab.json"))
        data["target_vocab"].save(os.path.join(run_dir, "target_vocab.json"))
        with open(os.path.join(run_dir, "test.tsv"), "w", encoding="utf-8") as f:
            for source, target in data["splits"]["test"]:
                f.write(f"{source}\t{target}\n")

    def load_assets(self, run_dir, meta):
        return {
            "source_vocab": Vocabulary.load(os.path.join(run_dir, "source_vocab.json")),
            "target_vocab": Vocabulary.load(os.path.join(run_dir, "target_vocab.json")),
            "test": os.path.join(run_dir, "test.tsv"),
        }

    def evaluate(self, model, meta, assets, args=None, data=None):
        settings = meta.settings
        beam_width = args.beam_width if args is not None else settings["beam_width"]
        if data is not None:
            pairs, title = data["splits"]["test"], "held-out test:"
        else:
            path = args.data or assets["test"]
            # The run's own test split is a TSV too; preprocess either as in training.
            preprocess = settings["preprocess"]
            pairs, report = load_parallel_tsv(
                path, lowercase=preprocess["lowercase"],
                space_punctuation=preprocess["space_punctuation"],
            )
            print(f"{path}: {report.summary()}")
            title = f"{args.run_dir} on {path}:"
        results = evaluate_run(model, assets["source_vocab"], assets["target_vocab"], settings,
                               pairs, beam_widths=sorted({1, beam_width}))
        print(title)
        for name, figures in results.items():
            line = (f"  {name:<7} exact match {100 * figures['exact_match']:.2f} % "
                    f"(n={figures['n']})")
            if "bleu" in figures:
                line += ", " + text_figures(figures)
            print(line)
        return results

    def explore_form(self, meta, extra_dir):
        from keras_attn.training.tasks.translator.explore import held_out_sources

        sources = held_out_sources(extra_dir)
        return [{"name": "text", "label": "Text to translate", "kind": "text",
                 "default": sources[0] if sources else "3 March 1998"}]

    def explore_example(self, meta, extra_dir, seed):
        from keras_attn.training.tasks.translator.explore import held_out_sources

        sources = held_out_sources(extra_dir)
        return {"text": sources[seed % len(sources)]} if sources else {}

    def explore(self, version_dir, meta, inputs):
        from keras_attn.training.tasks.translator.explore import explore

        return explore(version_dir, meta, inputs)

    def show_samples(self, model, meta, assets, data):
        sample = data["splits"]["test"][:5]
        translations = translate_texts(model, assets["source_vocab"], assets["target_vocab"],
                                       meta.settings, [s for s, _ in sample],
                                       meta.settings["beam_width"])
        print("sample translations (held-out):")
        for (source, target), translation in zip(sample, translations, strict=True):
            target = detokenize(target, meta.settings["preprocess"])
            mark = "✓" if translation == target else "✗"
            print(f"  {source!r} → {translation!r} {mark}")

    def export_archive(self, model, meta, assets):
        from keras_attn.training.tasks.translator.export import archive

        return archive(model, assets["source_vocab"], assets["target_vocab"], meta.settings)

    def add_predict_arguments(self, parser):
        parser.add_argument("inputs", nargs="*", help="the texts to translate")

    def check_predict_arguments(self, meta, args):
        if not args.inputs:
            raise SystemExit("predict: a translator export needs the texts to translate")

    def predict(self, version_dir, meta, args):
        from keras_attn.training.tasks.translator.predict import translate

        return translate(version_dir, meta, args.inputs)

    def plot(self, prediction, path):
        from keras_attn.training.tasks.translator.predict import plot_alignment

        plot_alignment(*prediction, path)


