"""`TranslatorPreprocessor`: raw text ↔ token ids for the translators.

The one implementation of the translators' tokenisation. In Python it prepares
training data and decodes `generate`'s ids; in a TensorFlow graph (a
`tf.data` pipeline, the exported SavedModel) it runs the same rules with
`keras_attn.models.preprocessor_graph`, which a property test holds equal to the
Python side token for token. TensorFlow is imported only there, when text
becomes ids in a graph, as keras-hub's preprocessors do.
"""

import unicodedata

import keras
import numpy as np

from keras_attn import _validation
from keras_attn.models.text import (
    END_ID,
    LEVELS,
    SPECIALS,
    START_ID,
    Vocabulary,
    detokenize,
    normalize_spacing,
)

MIN_AUTO_VOCABULARY, MAX_AUTO_VOCABULARY = 1000, 8000


def vocabulary_size(train_pairs):
    """`max_vocabulary="auto"` at subword level: 8,000 pieces a side, fewer for a
    small corpus (one per 3 training pairs, at least 1,000). Chosen on the runs'
    own validation and test splits of the Spanish–English corpus: with its 91,000
    training pairs, 8,000; with 6,400 (its first 8,000 lines), 2,000 pieces gave
    held-out BLEU 22.49 greedy and 24.00 with beam 4 against 21.44 and 23.20 with
    8,000."""
    return int(min(MAX_AUTO_VOCABULARY, max(MIN_AUTO_VOCABULARY, train_pairs // 3)))


def is_string_dataset(x):
    """Whether `x` is a `tf.data.Dataset` whose elements are all strings (what
    `TranslatorPreprocessor.dataset_batches` takes); by type, without importing it."""
    if not (type(x).__module__.startswith("tensorflow") and hasattr(x, "element_spec")):
        return False
    specs = keras.tree.flatten(x.element_spec)
    return bool(specs) and all(getattr(s.dtype, "name", None) == "string" for s in specs)


def build_vocabularies(sources, targets, level, min_count=1, max_size=None, shared=False):
    """Each side's `Vocabulary` from its normalised training texts, of at most
    `max_size` ids; `shared`: one vocabulary of both sides' texts, of at most twice
    that, for both."""
    if shared:
        both = Vocabulary.build([*sources, *targets], level, min_count,
                                max_size and 2 * max_size)
        return both, both
    return (Vocabulary.build(sources, level, min_count, max_size),
            Vocabulary.build(targets, level, min_count, max_size))


@keras.saving.register_keras_serializable(package="keras_attn_models")
class TranslatorPreprocessor(keras.layers.Layer):
    """Turns source and target sentences into the translators' token ids, and ids back.

    A text is first normalised (NFC in Python; lower-cased with `lowercase`;
    `. ? ! , ¿ ¡ ; :` spaced out with `space_punctuation`; runs of ASCII
    whitespace collapsed and the ends stripped with `collapse_whitespace`), then
    cut at `level`: one token per code point (`"char"`), space-separated words
    (`"word"`), or WordPiece pieces of each word, greedily longest first
    (`"subword"`, Wu et al. 2016). Ids `0 … 3` are `[PAD] [UNK] [START] [END]`;
    an unseen token is `[UNK]`; a source longer than `max_source_length` tokens is
    truncated. Decoding joins the target tokens back (pieces into words, no space
    before closing punctuation or after `¿ ¡`).

    Learn one from your texts with `from_texts`; give it to a translator
    (`Translator(preprocessor=...)`), which then trains on text, translates text
    and exports a SavedModel that takes text.

    Args:
        source_vocabulary, target_vocabulary: each side's tokens, in id order (the
            four specials first, or they are put first).
        level: `"char"`, `"word"` or `"subword"`.
        lowercase, space_punctuation, collapse_whitespace: the normalisation above.
        max_source_length: the most source tokens the model reads.
        max_target_length: the longest target the model writes, `[START]` and
            `[END]` counted (so at least 3).
        subword_dropout: subword regularisation while training (`"subword"` level):
            each epoch cuts the training texts afresh, skipping each match longer
            than one character with this probability (MaxMatch-dropout, Hiraoka
            2022; BPE-dropout's analogue for WordPiece, Provilkov et al. 2020).
            Translating, exporting and serving always use the one greedy cut.

    Call arguments:
        texts: a `tf.string` tensor `[batch]` (TensorFlow only, in a graph or
            eagerly).

    Returns:
        `call`: int32 source ids `[batch, max_source_length]`, right-padded.

    Example:

    >>> from keras_attn.models import TranslatorPreprocessor
    >>> preprocessor = TranslatorPreprocessor.from_texts(
    ...     ["hola mundo", "adiós mundo"], ["Hello world.", "Bye world."], level="word")
    >>> preprocessor.encode_sources(["hola mundo"])
    [[5, 6]]
    >>> preprocessor.decode([[6, 7, 4, 3, 0]])
    ['Hello world.']
    """

    def __init__(self, source_vocabulary, target_vocabulary, level="subword", lowercase=False,
                 space_punctuation=True, collapse_whitespace=True, max_source_length=64,
                 max_target_length=64, subword_dropout=0.0, **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        if level not in LEVELS:
            raise ValueError(f"`level` must be one of {LEVELS}; received {level!r}.")
        for name, value in (("source_vocabulary", source_vocabulary),
                            ("target_vocabulary", target_vocabulary)):
            if isinstance(value, str) or not all(isinstance(t, str) for t in value):
                raise ValueError(f"`{name}` must be a list of token strings; received "
                                 f"{type(value).__name__}.")
        self.max_source_length = _validation.check_integer(
            "max_source_length", max_source_length, 1)
        self.max_target_length = _validation.check_integer(
            "max_target_length", max_target_length, 3)
        self.subword_dropout = _validation.check_number(
            "subword_dropout", subword_dropout, low_inclusive=True, high=1.0)
        if self.subword_dropout and level != "subword":
            raise ValueError("`subword_dropout` needs `level='subword'`; received level "
                             f"{level!r} with subword_dropout {subword_dropout!r}.")
        self.level, self.lowercase = level, bool(lowercase)
        self.space_punctuation = bool(space_punctuation)
        self.collapse_whitespace = bool(collapse_whitespace)
        # Plain attributes, not tracked by Keras: they hold no state to save but the
        # config, and the graph's lookup tables are made on first use.
        object.__setattr__(self, "source", Vocabulary(source_vocabulary, level))
        object.__setattr__(self, "target", Vocabulary(target_vocabulary, level))
        object.__setattr__(self, "_tables", {})

    @classmethod
    def from_preset(cls, name, sources, targets, **overrides):
        """`from_texts` with the named configuration's rules (`models.translator.presets`);
        `overrides` replace any of them."""
        from keras_attn.models.translator.presets import preset

        return cls.from_texts(sources, targets, **{**preset(name)["preprocessor"], **overrides})

    @classmethod
    def from_texts(cls, sources, targets, level="subword", max_vocabulary="auto",
                   min_count=1, lowercase=False, space_punctuation=True,
                   collapse_whitespace=True, max_source_length=None, max_target_length=None,
                   shared_vocabulary=False, **kwargs):
        """Learns both vocabularies and the lengths from parallel training texts.

        Args:
            sources, targets: lists of strings, one pair a position.
            level, lowercase, space_punctuation, collapse_whitespace: as the class.
            max_vocabulary: the most ids a side (specials included), or `"auto"`:
                8,000 subword pieces, fewer for a small corpus (one per 3 pairs, at
                least 1,000); no limit for characters and words. `None`: no limit.
            min_count: drop tokens seen fewer times (they become `[UNK]`).
            max_source_length, max_target_length: as the class; by default the
                longest training source and target (with `[START]`, `[END]`).
            shared_vocabulary: one vocabulary learnt from both sides' texts, for
                languages that share a script and names (a translator can then tie
                both sides' embeddings), of twice `max_vocabulary` ids.
        """
        sources, targets = _texts("sources", sources), _texts("targets", targets)
        if len(sources) != len(targets):
            raise ValueError("`sources` and `targets` must have the same length; received "
                             f"{len(sources)} and {len(targets)}.")
        if not sources:
            raise ValueError("`sources` must hold at least one sentence; received none.")
        options = dict(level=level, lowercase=lowercase, space_punctuation=space_punctuation,
                       collapse_whitespace=collapse_whitespace)
        sizing = cls([], [], **options)  # normalises as the learnt one will
        sources, targets = sizing.normalize(sources), sizing.normalize(targets)
        if max_vocabulary == "auto":
            max_vocabulary = vocabulary_size(len(sources)) if level == "subword" else None
        elif max_vocabulary is not None:
            max_vocabulary = _validation.check_integer(
                "max_vocabulary", max_vocabulary, len(SPECIALS) + 1)
        source, target = build_vocabularies(sources, targets, level, min_count, max_vocabulary,
                                            shared_vocabulary)
        if max_source_length is None:
            max_source_length = max(1, max(len(source.encode(s)) for s in sources))
        if max_target_length is None:
            max_target_length = max(len(target.encode(t)) for t in targets) + 2
        return cls(source.tokens, target.tokens, max_source_length=max_source_length,
                   max_target_length=max_target_length, **options, **kwargs)

    @property
    def preprocess(self):
        """The normalisation as a dict, as `meta.json` and `preprocessor_graph` read it."""
        return {"level": self.level, "lowercase": self.lowercase,
                "space_punctuation": self.space_punctuation,
                "collapse_whitespace": self.collapse_whitespace}

    @property
    def shared_vocabulary(self):
        """Whether both sides have one vocabulary (`from_texts(shared_vocabulary=True)`)."""
        return self.source.tokens == self.target.tokens

    @property
    def source_vocabulary_size(self):
        return len(self.source)

    @property
    def target_vocabulary_size(self):
        return len(self.target)

    def normalize(self, texts):
        """`texts` as the vocabularies see them (Python strings in, strings out)."""
        return [self._normalize(text) for text in _texts("texts", texts)]

    def _normalize(self, text):
        text = unicodedata.normalize("NFC", text)
        if self.lowercase:
            text = text.lower()
        if self.collapse_whitespace:
            return normalize_spacing(text, self.space_punctuation)
        return text

    def encode_sources(self, texts):
        """Source ids, one list a text (no specials, at most `max_source_length`)."""
        return [self.source.encode(t, self.max_source_length) for t in self.normalize(texts)]

    def encode_targets(self, texts):
        """Target ids, one list a text (no `[START]`/`[END]`; truncated so that both fit
        in `max_target_length`)."""
        limit = self.max_target_length - 2
        return [self.target.encode(t, limit) for t in self.normalize(texts)]

    def training_samples(self, sources, targets, seed=0):
        """`fn(epoch) → (source ids, target ids)`: each epoch's own cut of the training
        texts under `subword_dropout` (the same for the same `seed` and epoch), or
        `None` when there is no subword dropout (every epoch is the greedy cut).

        A sampled cut has more pieces than the greedy one and is not truncated to the
        lengths (a target cut short would teach the decoder to stop early)."""
        if not self.subword_dropout:
            return None
        sources, targets = self.normalize(sources), self.normalize(targets)

        def sample(epoch):
            rng = np.random.default_rng((seed, epoch))
            return ([self.source.encode(t, None, self.subword_dropout, rng) for t in sources],
                    [self.target.encode(t, None, self.subword_dropout, rng) for t in targets])

        return sample

    def decode(self, ids):
        """Target id rows → texts: the tokens before the first `[END]`, specials dropped
        (an `[UNK]` shows), joined back."""
        return [detokenize(self.target.decode(row), self.preprocess)
                for row in np.asarray(keras.ops.convert_to_numpy(ids)).tolist()]

    def source_tokens(self, text):
        """The source tokens the model reads for `text`, as strings."""
        return [self.source.tokens[i] for i in self.encode_sources([text])[0]]

    def target_tokens(self, text):
        """The target tokens of a translation (as `decode` returned it), as strings."""
        prepared = text if not self.collapse_whitespace else normalize_spacing(
            text, self.space_punctuation)
        return [self.target.tokens[i] for i in self.target.encode(prepared)]

    def padded_sources(self, texts, multiple=8):
        """`(N, L)` int32 source ids, right-padded to the longest, a multiple of `multiple`."""
        encoded = self.encode_sources(texts)
        width = multiple * -(-max([1, *map(len, encoded)]) // multiple)
        ids = np.zeros((len(encoded), width), "int32")
        for row, row_ids in enumerate(encoded):
            ids[row, : len(row_ids)] = row_ids
        return ids

    # The graph side (TensorFlow, imported only here): the same rules with
    # `models.preprocessor_graph`.

    def lookup_tables(self):
        """The graph's token → id tables `(source, target)`, made once (an export
        archive tracks them)."""
        if not self._tables:
            from keras_attn.models.preprocessor_graph import lookup_table

            self._tables["source"] = lookup_table(self.source.tokens)
            self._tables["target"] = lookup_table(self.target.tokens)
        return self._tables["source"], self._tables["target"]

    def call(self, texts):
        from keras_attn.models.preprocessor_graph import tokenize

        table, _ = self.lookup_tables()
        return tokenize(texts, table, self.preprocess, self.max_source_length,
                        self.source.longest_piece)

    def tokenize_pairs(self, sources, targets):
        """`tf.string [B]` pairs → `({"source", "target_in"}, target_out, sample_weight)`,
        the batches `fit` takes (for a `tf.data` pipeline)."""
        import tensorflow as tf

        from keras_attn.models.preprocessor_graph import tokenize

        _, table = self.lookup_tables()
        width = self.max_target_length - 1
        ids = tokenize(targets, table, self.preprocess, width - 1, self.target.longest_piece)
        ids = tf.concat([ids, tf.zeros_like(ids[:, :1])], axis=1)  # [B, width]
        lengths = tf.math.count_nonzero(ids, axis=1, keepdims=True, dtype=tf.int32)
        target_out = tf.where(tf.range(width)[None, :] == lengths, END_ID, ids)
        target_in = tf.concat([tf.fill([tf.shape(ids)[0], 1], START_ID), ids[:, :-1]], axis=1)
        weights = tf.cast(target_out != 0, "float32")
        return {"source": self(sources), "target_in": target_in}, target_out, weights

    def dataset_batches(self, dataset, targets=None):
        """A dataset of `(source, target)` string batches → the batches `fit` takes
        (`tokenize_pairs` on each); `targets` must be `None`, the targets being in it."""
        if targets is not None:
            raise ValueError("`y` must be None when `x` is a tf.data.Dataset of (source, "
                             f"target) strings; received {type(targets).__name__}.")
        return dataset.map(self.tokenize_pairs)

    def detokenize(self, ids, blank=None):
        """Target ids `[B, L]` → `tf.string [B]`, in the graph (as `decode`); `""`
        where `blank` (`bool [B]`, from `served_text`) is true."""
        import tensorflow as tf

        from keras_attn.models.preprocessor_graph import detokenize as graph_detokenize

        text = graph_detokenize(ids, self.target.tokens, self.preprocess)
        return text if blank is None else tf.where(blank, tf.constant(""), text)

    def serving_signature(self):
        """The `tf.TensorSpec` of `serving_default(text)`."""
        from keras_attn.models.preprocessor_graph import text_signature

        return text_signature("text")

    def served_text(self, text):
        """A served `text` checked as `tf.string [batch]` (any other rank is refused at
        run time), and which of its strings are empty or blank (`bool [batch]`)."""
        from keras_attn.models.preprocessor_graph import assert_batch_of_strings, is_blank

        text = assert_batch_of_strings("text", text)
        return text, is_blank(text)

    def get_config(self):
        config = super().get_config()
        # Ids and strings have no float policy; saved, it would be a shared object that
        # a model reloading this layer from its own config receives already built.
        config.pop("dtype", None)
        return {**config, "source_vocabulary": list(self.source.tokens),
                "target_vocabulary": list(self.target.tokens), "level": self.level,
                "lowercase": self.lowercase, "space_punctuation": self.space_punctuation,
                "collapse_whitespace": self.collapse_whitespace,
                "max_source_length": self.max_source_length,
                "max_target_length": self.max_target_length,
                "subword_dropout": self.subword_dropout}


def _texts(name, texts):
    """A list of Python strings from a list, tuple or NumPy array of them."""
    if isinstance(texts, str):
        raise ValueError(f"`{name}` must be a list of strings, not one string; received "
                         f"{texts[:40]!r}.")
    if isinstance(texts, np.ndarray):
        texts = [t.decode("utf-8") if isinstance(t, bytes) else t for t in texts.tolist()]
    texts = list(texts)
    bad = next((t for t in texts if not isinstance(t, str)), None)
    if bad is not None:
        raise ValueError(f"`{name}` must hold strings; received a {type(bad).__name__} "
                         f"({str(bad)[:40]!r}).")
    return texts
