"""Tokenisation and vocabularies shared by training and the exported graph.

The rules are deliberately small so that `training/export.py` can repeat them with
TensorFlow string ops, token for token (a property test checks it):

* `char` level: one token per Unicode code point.
* `word` level: the text is split on single spaces (the loaders collapse
  whitespace and space out punctuation beforehand).
* `subword` level: each word is cut into WordPiece pieces, greedily longest
  first (Wu et al. 2016; BERT's WordPiece): a word's first piece as it is, the
  others prefixed with `##`; a word with a character no piece covers, or longer
  than `MAX_WORD_CHARS`, is one `[UNK]`. The pieces are learnt on the training
  side only (Hugging Face `tokenizers`' WordPiece trainer); cutting needs only
  a lookup table, so the exported graph repeats it with core TensorFlow ops.
* ids: `[PAD]=0 [UNK]=1 [START]=2 [END]=3`, then the vocabulary; unseen tokens
  map to `[UNK]`; a source longer than `max_length` is truncated at the end.
"""

import json
import re
from collections import Counter

import numpy as np

PAD, UNK, START, END = "[PAD]", "[UNK]", "[START]", "[END]"
SPECIALS = (PAD, UNK, START, END)
PAD_ID, UNK_ID, START_ID, END_ID = range(4)
LEVELS = ("char", "word", "subword")
CONTINUATION = "##"  # marks a piece that continues a word
MAX_WORD_CHARS = 100  # a longer word is one [UNK] (BERT's rule)

# ASCII whitespace only: TF's RE2 `\s` and Python's differ beyond it.
WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")
PUNCTUATION = re.compile(r"([.?!,¿¡;:])")


def normalize_spacing(text, space_punctuation=False):
    """Collapses ASCII whitespace (and spaces out punctuation) and strips the ends."""
    if space_punctuation:
        text = PUNCTUATION.sub(r" \1 ", text)
    return WHITESPACE.sub(" ", text).strip(" \t\n\r\f\v")


# What `space_punctuation` spaced out, joined back to the word it follows (or,
# for the opening Spanish marks, precedes): "¿ qué ? sí ." → "¿qué? sí."
SPACED_CLOSING = re.compile(r" ([.?!,;:])")
SPACED_OPENING = re.compile(r"([¿¡]) ")


def detokenize(text, preprocess):
    """Undoes `space_punctuation` on a decoded word or subword text (nothing at
    character level, where no space was added between tokens)."""
    if preprocess.get("level") == "char" or not preprocess.get("space_punctuation"):
        return text
    return SPACED_OPENING.sub(r"\1", SPACED_CLOSING.sub(r"\1", text))


class Vocabulary:
    """Token ↔ id mapping at `char`, `word` or `subword` level, saved as JSON beside a
    model."""

    def __init__(self, tokens, level="char"):
        if level not in LEVELS:
            raise ValueError(f"`level` must be one of {LEVELS}; received {level!r}.")
        tokens = list(tokens)
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            tokens = list(SPECIALS) + [t for t in tokens if t not in SPECIALS]
        self.tokens = tokens
        self.level = level
        self.index = {t: i for i, t in enumerate(tokens)}
        self._pieces = {}  # word → its subword ids, as computed

    @property
    def longest_piece(self):
        """The most characters of one piece, without its `##` (subword level)."""
        return max((len(t.removeprefix(CONTINUATION)) for t in self.tokens[len(SPECIALS):]),
                   default=1)

    @classmethod
    def build(cls, texts, level="char", min_count=1, max_size=None):
        """The specials, then the tokens of `texts` seen at least `min_count` times in
        code-point order; with `max_size`, only the most frequent ones that fit
        (ties broken in code-point order). At `subword` level, WordPiece pieces
        learnt from `texts` (at most `max_size` ids, 8000 by default)."""
        if max_size is not None and max_size <= len(SPECIALS):
            raise ValueError(
                f"`max_size` must be more than the {len(SPECIALS)} special tokens; "
                f"received {max_size}."
            )
        if level == "subword":
            return cls(list(SPECIALS) + _learn_pieces(texts, max_size or 8000, min_count),
                       level)
        counts = Counter(tok for text in texts for tok in split(text, level))
        kept = sorted(
            (t for t, c in counts.items() if c >= min_count and t not in SPECIALS),
            key=lambda t: (-counts[t], t),
        )
        if max_size is not None:
            kept = kept[: max_size - len(SPECIALS)]
        return cls(list(SPECIALS) + sorted(kept), level)

    def __len__(self):
        return len(self.tokens)

    def encode(self, text, max_length=None, dropout=0.0, rng=None):
        """Ids of `text`. At `subword` level, `dropout` > 0 samples a segmentation
        (MaxMatch-dropout, Hiraoka 2022: each match longer than one character is
        skipped with probability `dropout`), drawing from the NumPy Generator `rng`:
        subword regularisation for training; 0 gives the one greedy segmentation."""
        if self.level == "subword":
            if dropout:
                ids = [i for word in split(text, "word") for i in self._cut(word, dropout, rng)]
            else:
                ids = [i for word in split(text, "word") for i in self.word_pieces(word)]
        else:
            ids = [self.index.get(t, UNK_ID) for t in split(text, self.level)]
        return ids[:max_length] if max_length is not None else ids

    def word_pieces(self, word):
        """A word's subword ids: the longest known piece first, then `##` pieces."""
        if word not in self._pieces:
            self._pieces[word] = self._cut(word)
        return self._pieces[word]

    def _cut(self, word, dropout=0.0, rng=None):
        if len(word) > MAX_WORD_CHARS:
            return [UNK_ID]
        ids, start, longest = [], 0, self.longest_piece
        while start < len(word):
            prefix = CONTINUATION if start else ""
            for end in range(min(len(word), start + longest), start, -1):
                piece = self.index.get(prefix + word[start:end])
                if piece is None or piece < len(SPECIALS):
                    continue
                # A single character is never skipped, so a word that the greedy cut
                # can spell is always spelt.
                if dropout and end - start > 1 and rng.random() < dropout:
                    continue
                ids.append(piece)
                start = end
                break
            else:
                # A skip that led where no piece continues: the greedy cut instead.
                return self.word_pieces(word) if dropout else [UNK_ID]
        return ids

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
        if self.level == "char":
            return "".join(out)
        text = " ".join(out)
        return text.replace(" " + CONTINUATION, "") if self.level == "subword" else text

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


def _learn_pieces(texts, size, min_count):
    """WordPiece pieces of the space-separated words of `texts` (at most `size`
    ids with the specials), in code-point order."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token=UNK, continuing_subword_prefix=CONTINUATION))
    # Words are what `split(text, "word")` gives: single spaces separate them.
    tokenizer.pre_tokenizer = pre_tokenizers.Split(" ", behavior="removed")
    trainer = trainers.WordPieceTrainer(
        vocab_size=size, min_frequency=min_count, special_tokens=list(SPECIALS),
        continuing_subword_prefix=CONTINUATION, show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    return sorted(t for t in tokenizer.get_vocab() if t not in SPECIALS)


def split(text, level):
    """Characters, or space-separated words (also the words that `subword` cuts)."""
    if level == "char":
        return list(text)
    return [w for w in text.split(" ") if w] if text else []


def encode_batch(vocab, texts, max_length, add_start_end=False):
    """Right-padded int32 ids `(N, max_length)` (with `[START] … [END]` if asked)."""
    out = np.zeros((len(texts), max_length), "int32")
    for row, text in enumerate(texts):
        ids = vocab.encode(text)
        if add_start_end:
            ids = [START_ID] + ids[: max_length - 2] + [END_ID]
        out[row, : len(ids[:max_length])] = ids[:max_length]
    return out
