"""The `translator` task's data: splits, vocabularies, training batches."""

import dataclasses

import numpy as np

from keras_attn.models.batching import BucketedBatches
from keras_attn.models.text import END_ID, UNK_ID
from keras_attn.models.translator.preprocessor import (
    TranslatorPreprocessor,
    build_vocabularies,
    vocabulary_size,
)
from keras_attn.training.errors import UsageError
from keras_attn.training.tasks.translator.dates import date_splits
from keras_attn.training.tasks.translator.parallel import load_parallel_tsv, split_pairs


@dataclasses.dataclass(frozen=True)
class TranslationData:
    """A translator run's prepared data.

    Attributes:
        kind: `"dates"` (the built-in task) or `"text"` (`--data`).
        splits: `{"train" | "validation" | "test": [(source, target), …]}` texts,
            normalised as the preprocessor normalises.
        preprocessor: the `TranslatorPreprocessor` learnt on the training split
            (vocabularies, normalisation, the longest source and target).
        train_ids: `(sources, targets)`, the training pairs as id lists (no
            `[START]` / `[END]`).
        batches: `(training, validation)` batches once the task has made them.
    """

    kind: str
    splits: dict
    preprocessor: TranslatorPreprocessor
    train_ids: tuple
    batches: tuple | None = None

    @property
    def source_vocab(self):
        return self.preprocessor.source

    @property
    def target_vocab(self):
        return self.preprocessor.target

    @property
    def max_source_length(self):
        """The longest training source, in tokens."""
        return self.preprocessor.max_source_length

    @property
    def max_target_length(self):
        """The longest training target with `[START]` and `[END]`."""
        return self.preprocessor.max_target_length

    @property
    def preprocess(self):
        """How texts are normalised before the vocabularies see them."""
        return self.preprocessor.preprocess


def load_data(args):
    """The run's `TranslationData` (without batches).

    `args` are the task's resolved options (`TranslatorTask.resolve`).
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
            raise UsageError(str(error)) from None
        print(f"{args.data}: {report.summary()}")
        if report.bad_lines:
            print(f"  malformed lines (first {len(report.bad_lines)}): {report.bad_lines}")
        if len(pairs) < 10:
            raise UsageError(f"{args.data}: only {len(pairs)} usable pairs (at least 10 needed)")
        try:
            splits = split_pairs(pairs, seed=args.seed)
        except ValueError as error:
            raise UsageError(f"{args.data}: {error}") from None
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
    source_vocab, target_vocab = build_vocabularies(
        [s for s, _ in train], [t for _, t in train], level, args.min_count, size,
        shared=args.shared_vocabulary)
    sources = [source_vocab.encode(s) for s, _ in train]
    targets = [target_vocab.encode(t) for _, t in train]
    if args.max_tokens is not None:
        keep = [max(len(s), len(t)) <= args.max_tokens for s, t in zip(sources, targets,
                                                                         strict=True)]
        if not any(keep):
            raise UsageError(f"--max-tokens {args.max_tokens}: no training pair is that short")
        if not all(keep):
            print(f"  {keep.count(False)} training pairs longer than --max-tokens "
                  f"{args.max_tokens} left out")
        train = splits["train"] = [p for p, k in zip(train, keep, strict=True) if k]
        sources = [ids for ids, k in zip(sources, keep, strict=True) if k]
        targets = [ids for ids, k in zip(targets, keep, strict=True) if k]
    preprocessor = TranslatorPreprocessor(
        source_vocab.tokens, target_vocab.tokens, **preprocess,
        max_source_length=max(map(len, sources)),
        max_target_length=max(map(len, targets)) + 2,
        subword_dropout=args.subword_dropout,
    )
    return TranslationData(kind=kind, splits=splits, preprocessor=preprocessor,
                           train_ids=(sources, targets))


def run_preprocessor(source_vocab, target_vocab, settings):
    """The run's `TranslatorPreprocessor`, from its vocabularies and `RunMeta.settings`
    (also for a run saved before the model held its preprocessor)."""
    return TranslatorPreprocessor(
        source_vocab.tokens, target_vocab.tokens, **settings["preprocess"],
        max_source_length=int(settings["max_source_length"]),
        max_target_length=int(settings["max_target_length"]))


def unknown_rates(data, pairs):
    """The share of source and target tokens of `pairs` that map to `[UNK]`."""
    rates = []
    for vocab, texts in ((data.source_vocab, [s for s, _ in pairs]),
                         (data.target_vocab, [t for _, t in pairs])):
        ids = [i for text in texts for i in vocab.encode(text)]
        rates.append(sum(i == UNK_ID for i in ids) / max(len(ids), 1))
    return tuple(rates)


def datasets(data, batch_size, seed, sort_window=1):
    """Length-bucketed training batches (reshuffled every epoch, and cut afresh with
    the preprocessor's subword dropout) and validation ones."""
    resample = data.preprocessor.training_samples(*zip(*data.splits["train"], strict=True),
                                                  seed=seed)
    train = BucketedBatches(*(resample(0) if resample else data.train_ids), batch_size,
                            window=sort_window, seed=seed, resample=resample)
    pairs = data.splits["validation"]
    source_max, target_max = data.max_source_length, data.max_target_length - 2
    validation = BucketedBatches(
        [data.source_vocab.encode(s, source_max) for s, _ in pairs],
        [data.target_vocab.encode(t, target_max) for _, t in pairs],
        batch_size, shuffle=False,
    )
    return train, validation


def target_token_counts(data):
    """How often each target id occurs in training (`[END]` once a sentence)."""
    _, targets = data.train_ids
    counts = np.bincount(
        np.fromiter((i for ids in targets for i in ids), "int64"),
        minlength=len(data.target_vocab),
    )
    counts[END_ID] += len(targets)
    return counts
