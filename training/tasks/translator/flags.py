"""The `translator` task's flags and their data-dependent defaults (`PROFILES`):
the built-in dates, or real sentences with `--data`. Resolved once, at the task's
edge, where the command line becomes options (`resolve_defaults`, the task's
`resolve`)."""

import argparse
import dataclasses

from keras_attn.choices import RNN_CELLS, TRANSLATOR_ATTENTIONS
from keras_attn.models.translator.presets import preset
from keras_attn.training.arguments import (
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    positive_int_or_auto,
    probability,
)
from keras_attn.training.errors import UsageError

# `--model` → the model's name (its run and export folders) with the built-in data.
MODEL_NAMES = {"rnn": "translator", "transformer": "transformer"}


DEFAULT_LEARNING_RATE = 3e-3  # the RNN's rate, and the peak of the Transformer's on dates
TEXT_TRANSFORMER_RATE = 1e-3  # the Transformer's peak on real text


# Defaults that depend on the data: the built-in dates, or real sentences with
# `--data` (a file of fewer than `SMALL_CORPUS_LINES` lines: the small-corpus
# levers too). The model and preprocessor settings are the translators' presets
# (`models.translator.presets`); the training budget is the command's. A flag given
# on the command line always wins.
SMALL_CORPUS_LINES = 16_000  # chosen at 8,000 lines (benchmarks/translator_sizes.py)
TRAINING = {
    "dates": dict(sort_window=1, max_tokens=None, epochs=3, max_minutes=None, patience=None,
                  warmup_steps=100),
    "text": dict(sort_window=50, max_tokens=50, epochs=100, max_minutes=30.0, patience=3,
                 warmup_steps=400),
}
TRAINING["small-text"] = TRAINING["text"]


def _profile(name):
    """A profile's flag values, from the preset of the same name."""
    settings = preset(name)
    rnn, transformer, rules = settings["rnn"], settings["transformer"], settings["preprocessor"]
    return dict(
        level=rules["level"], lowercase=rules["lowercase"],
        space_punctuation=rules["space_punctuation"], max_vocab=rules["max_vocabulary"],
        shared_vocabulary=rules["shared_vocabulary"], subword_dropout=rules["subword_dropout"],
        **{key: rnn[key] for key in ("attention", "input_feeding", "embedding_dim",
                                     "encoder_units", "decoder_units", "attention_units",
                                     "dropout", "word_dropout", "tie_embeddings")},
        **{key: transformer[key] for key in ("model_dim", "feedforward_dim", "num_layers")},
        label_smoothing=settings["compile"]["label_smoothing"], **TRAINING[name])


PROFILES = {name: _profile(name) for name in ("dates", "text", "small-text")}
SMALL_CORPUS = {key: value for key, value in PROFILES["small-text"].items()
                if value != PROFILES["text"][key]}


def _profile_help(name):
    dates, text = PROFILES["dates"][name], PROFILES["text"][name]
    small = PROFILES["small-text"][name]
    return (f"default: {dates} for the built-in dates, {text} with --data"
            + (f" ({small} for a file of under {SMALL_CORPUS_LINES:,} lines)"
               if small != text else ""))


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
    data.add_argument("--max-vocab", type=positive_int_or_auto,
                      help="ids of each side's vocabulary, with the 4 specials: the most "
                      "frequent tokens (the rest become [UNK]), or the number of subword "
                      "pieces; " + _profile_help("max_vocab") + " (auto: 8000 a side, "
                      "fewer subword pieces for a small corpus: one per 3 training pairs, at "
                      "least 1000)")
    data.add_argument("--shared-vocabulary", action=argparse.BooleanOptionalAction,
                      help="one vocabulary learnt from both sides (twice --max-vocab ids), "
                      "for languages that share a script and names; with --tie-embeddings "
                      "both sides read one embedding; " + _profile_help("shared_vocabulary"))
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
        choices=TRANSLATOR_ATTENTIONS,
        help="the score of the decoder's attention; " + _profile_help("attention"),
    )
    model.add_argument("--rnn", choices=RNN_CELLS, default="gru")
    model.add_argument(
        "--input-feeding", action=argparse.BooleanOptionalAction,
        help="feed the last attention vector into the next step (Luong et al.); without "
        "it, training attends for all steps at once; " + _profile_help("input_feeding"))
    for name in ("embedding_dim", "encoder_units", "decoder_units", "attention_units"):
        model.add_argument("--" + name.replace("_", "-"), type=positive_int,
                           help=_profile_help(name))
    model.add_argument(
        "--tie-embeddings", action=argparse.BooleanOptionalAction,
        help="the target embedding is the output layer too (Press & Wolf 2017), and with "
        "--shared-vocabulary the source embedding as well (--model rnn only); "
        + _profile_help("tie_embeddings"))
    regularise = parser.add_argument_group("regularisation (both models)")
    regularise.add_argument(
        "--dropout", type=probability,
        help="the RNNs' input dropout; the Transformer's on embeddings, attention and "
        "residual branches; " + _profile_help("dropout"))
    regularise.add_argument(
        "--word-dropout", type=probability,
        help="replace each source token by [UNK] with this probability while training "
        "(Sennrich & Zhang 2019); " + _profile_help("word_dropout"))
    regularise.add_argument(
        "--subword-dropout", type=probability,
        help="subword regularisation (--level subword): each epoch cuts the training "
        "text afresh, skipping each longer-than-one-character piece with this probability "
        "(MaxMatch-dropout; translating always uses the one greedy cut); "
        + _profile_help("subword_dropout"))
    regularise.add_argument(
        "--label-smoothing", type=probability,
        help="the loss's label smoothing ε; " + _profile_help("label_smoothing"))
    transformer = parser.add_argument_group("transformer (--model transformer)")
    transformer.add_argument("--model-dim", type=positive_int, help=_profile_help("model_dim"))
    transformer.add_argument("--num-heads", type=positive_int, default=4)
    transformer.add_argument("--num-layers", type=positive_int, help=_profile_help("num_layers"))
    transformer.add_argument("--feedforward-dim", type=positive_int,
                             help=_profile_help("feedforward_dim"))
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


def corpus_lines(path):
    """The non-empty lines of a `--data` file (`None` if it cannot be read: the data
    loader then says why)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return None


def profile_of(options):
    """The flags' profile: `"dates"` without `--data`; with it, `"small-text"` for a
    file of fewer than `SMALL_CORPUS_LINES` lines, else `"text"`."""
    if not options.data:
        return "dates"
    lines = corpus_lines(options.data)
    return "small-text" if lines is not None and lines < SMALL_CORPUS_LINES else "text"


def profile_line(options):
    """The line a run opens with: the profile it trains with, and why."""
    kind = profile_of(options)
    if kind == "dates":
        return "profile: dates (the built-in data)"
    lines = corpus_lines(options.data)
    if kind == "small-text":
        # The numbers first, then the switches by what they turn on.
        switches = {"shared_vocabulary": "a shared vocabulary",
                    "tie_embeddings": "tied embeddings (RNN)"}
        levers = ", ".join(
            switches[name] if value is True else f"{name.replace('_', ' ')} {value}"
            for name, value in sorted(SMALL_CORPUS.items(),
                                      key=lambda item: isinstance(item[1], bool)))
        return (f"profile: small-text ({lines:,} lines, fewer than {SMALL_CORPUS_LINES:,}): "
                f"the text defaults with {levers} (flags given win)")
    return f"profile: text ({lines:,} lines)"


def resolve_defaults(options):
    """The options with every flag left unset at its profile's value (dates, or text
    with `--data`)."""
    profile = PROFILES[profile_of(options)]
    if options.model == "transformer":  # tied embeddings are an option of the RNN only
        profile = {**profile, "tie_embeddings": False}
    unset = {name: value for name, value in profile.items() if getattr(options, name) is None}
    level = options.level or profile["level"]
    if level != "subword":  # subword regularisation cuts subwords only
        if options.subword_dropout:
            raise UsageError(f"--subword-dropout needs --level subword; received --level "
                             f"{level} with --subword-dropout {options.subword_dropout}")
        unset["subword_dropout"] = 0.0
    return dataclasses.replace(options, **unset)
