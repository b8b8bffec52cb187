"""Tokenisation and vocabularies shared by training and the exported graph.

The rules are deliberately small so that `training/export.py` can repeat them with
TensorFlow string ops, token for token (a property test checks it):

* `char` level: one token per Unicode code point.
* `word` level: the text is split on single spaces (the loaders collapse
  whitespace and space out punctuation beforehand).
* ids: `[PAD]=0 [UNK]=1 [START]=2 [END]=3`, then the vocabulary; unseen tokens
  map to `[UNK]`; a source longer than `max_length` is truncated at the end.
"""

import json
import re
from collections import Counter

PAD, UNK, START, END = "[PAD]", "[UNK]", "[START]", "[END]"
SPECIALS = (PAD, UNK, START, END)
PAD_ID, UNK_ID, START_ID, END_ID = range(4)
LEVELS = ("char", "word")

# ASCII whitespace only: TF's RE2 `\s` and Python's differ beyond it.
WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")
PUNCTUATION = re.compile(r"([.?!,¿¡;:])")


def normalize_spacing(text, space_punctuation=False):
    """Collapses ASCII whitespace (and spaces out punctuation) and strips the ends."""
    if space_punctuation:
        text = PUNCTUATION.sub(r" \1 ", text)
    return WHITESPACE.sub(" ", text).strip(" \t\n\r\f\v")


class Vocabulary:
    """Token ↔ id mapping at `char` or `word` level, saved as JSON beside a model."""

    def __init__(self, tokens, level="char"):
        if level not in LEVELS:
            raise ValueError(f"`level` must be one of {LEVELS}; received {level!r}.")
        tokens = list(tokens)
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            tokens = list(SPECIALS) + [t for t in tokens if t not in SPECIALS]
        self.tokens = tokens
        self.level = level
        self.index = {t: i for i, t in enumerate(tokens)}

    @classmethod
    def build(cls, texts, level="char", min_count=1):
        counts = Counter(tok for text in texts for tok in split(text, level))
        kept = sorted(t for t, c in counts.items() if c >= min_count and t not in SPECIALS)
        return cls(list(SPECIALS) + kept, level)

    def __len__(self):
        return len(self.tokens)

    def encode(self, text, max_length=None):
        ids = [self.index.get(t, UNK_ID) for t in split(text, self.level)]
        return ids[:max_length] if max_length is not None else ids

    def decode(self, ids):
        """Tokens up to the first `[END]`, without specials, joined back to text."""
        out = []
        for i in ids:
            i = int(i)
            if i == END_ID:
                break
            if i >= len(SPECIALS):
                out.append(self.tokens[i])
            elif i == UNK_ID:
                out.append(UNK)
        return ("" if self.level == "char" else " ").join(out)

    def to_json(self):
        return json.dumps({"level": self.level, "tokens": self.tokens}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        return cls(data["tokens"], data["level"])

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read())


def split(text, level):
    if level == "char":
        return list(text)
    return text.split(" ") if text else []


def encode_batch(vocab, texts, max_length, add_start_end=False):
    """Right-padded int32 ids `(N, max_length)` (with `[START] … [END]` if asked)."""
    import numpy as np

    out = np.zeros((len(texts), max_length), "int32")
    for row, text in enumerate(texts):
        ids = vocab.encode(text)
        if add_start_end:
            ids = [START_ID] + ids[: max_length - 2] + [END_ID]
        out[row, : len(ids[:max_length])] = ids[:max_length]
    return out
