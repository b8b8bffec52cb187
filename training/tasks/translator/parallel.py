"""Loader for tab-separated parallel text (the Anki / Tatoeba format).

Each line is `source<TAB>target[<TAB>attribution]`, UTF-8, as used by the
TensorFlow NMT tutorial's `spa-eng` files. Lines that do not parse are counted and
reported in `LoadReport`, never dropped silently.
"""

import dataclasses
import random
import unicodedata

from keras_attn.models.text import normalize_spacing
from keras_attn.training.data import read_utf8_lines


@dataclasses.dataclass
class LoadReport:
    """What the loader kept and why it skipped the rest."""

    lines: int = 0
    pairs: int = 0
    malformed: int = 0  # fewer than two tab-separated fields
    empty: int = 0  # a side that is empty after normalisation
    too_long: int = 0  # longer than `max_length` characters on either side
    over_limit: int = 0  # past `max_pairs`
    bad_lines: list = dataclasses.field(default_factory=list)  # first few line numbers

    def summary(self):
        return (
            f"{self.pairs} pairs from {self.lines} lines; skipped {self.malformed} malformed, "
            f"{self.empty} empty, {self.too_long} too long, {self.over_limit} over the limit"
        )


def normalize_text(text, unicode_form="NFC", lowercase=False, space_punctuation=False):
    """Unicode normalisation, optional lower-casing and punctuation spacing."""
    if unicode_form:
        text = unicodedata.normalize(unicode_form, text)
    if lowercase:
        text = text.lower()
    return normalize_spacing(text, space_punctuation)


def load_parallel_tsv(
    path,
    reverse=False,
    max_pairs=None,
    max_length=None,
    unicode_form="NFC",
    lowercase=False,
    space_punctuation=False,
):
    """Reads `(source, target)` pairs from a TSV file.

    Args:
        path: the file.
        reverse: translate column 2 → column 1 instead of 1 → 2 (the tutorial's
            `spa-eng` file is English first).
        max_pairs: keep at most this many pairs (the first ones).
        max_length: skip pairs with a side longer than this (in characters).
        unicode_form: `"NFC"`, `"NFKC"`, `"NFD"`, `"NFKD"` or `None`.
        lowercase: lower-case both sides.
        space_punctuation: put spaces around `. ? ! , ¿ ¡ ; :` (for word level).

    Returns:
        `(pairs, report)`.
    """
    report = LoadReport()
    pairs = []
    for number, line in enumerate(read_utf8_lines(path), start=1):
        line = line.rstrip("\n").rstrip("\r")
        if not line.strip():
            continue
        report.lines += 1
        fields = line.split("\t")
        if len(fields) < 2:
            report.malformed += 1
            if len(report.bad_lines) < 10:
                report.bad_lines.append(number)
            continue
        source, target = (fields[1], fields[0]) if reverse else (fields[0], fields[1])
        source = normalize_text(source, unicode_form, lowercase, space_punctuation)
        target = normalize_text(target, unicode_form, lowercase, space_punctuation)
        if not source or not target:
            report.empty += 1
            continue
        if max_length is not None and max(len(source), len(target)) > max_length:
            report.too_long += 1
            continue
        if max_pairs is not None and len(pairs) >= max_pairs:
            report.over_limit += 1
            continue
        pairs.append((source, target))
    report.pairs = len(pairs)
    return pairs, report


def split_pairs(pairs, validation=0.1, test=0.1, seed=0):
    """Shuffled train / validation / test splits with no source shared across them;
    each split gets at least one source sentence.

    Raises:
        ValueError: with fewer than 3 distinct source sentences (one a split).
    """
    by_source = {}
    for source, target in pairs:
        by_source.setdefault(source, []).append((source, target))
    sources = sorted(by_source)
    if len(sources) < 3:
        raise ValueError(
            f"{len(sources)} distinct source sentence(s); at least 3 are needed, as the "
            "train, validation and test splits share no source sentence")
    random.Random(seed).shuffle(sources)
    n_test = max(1, int(round(len(sources) * test)))
    n_val = max(1, min(int(round(len(sources) * validation)), len(sources) - n_test - 1))
    groups = {
        "test": sources[:n_test],
        "validation": sources[n_test : n_test + n_val],
        "train": sources[n_test + n_val :],
    }
    return {name: [p for s in group for p in by_source[s]] for name, group in groups.items()}
