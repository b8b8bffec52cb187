"""The preprocessors' string handling in a TensorFlow graph: text to ids and back.

The graph half of `keras_attn.models.text`, called only by a preprocessor's graph
methods, when text becomes ids in a `tf.data` pipeline or a SavedModel (and by the
command line's exports, for their input checks). Each function imports TensorFlow
itself, when it runs, as keras-hub's preprocessors do: importing this module, or
anything in `models/`, never loads TensorFlow. The text operations repeat
`keras_attn.models.text` token for token (property tests check it): code-point,
space-separated word or WordPiece tokens, `[UNK]` for unseen ones, padding and
truncation to the trained maximum; inputs are expected in NFC, as TensorFlow has no
Unicode normalisation op.
"""

import re

import keras

from keras_attn.models.text import (
    CONTINUATION,
    END_ID,
    MAX_WORD_CHARS,
    SPACED_CLOSING,
    SPACED_OPENING,
    SPECIALS,
    UNK_ID,
)


def assert_rank(value, rank, message):
    """A run-time check that `value` has `rank` axes, failing with `message`.

    A loaded signature accepts other ranks, and a static rank check folds away
    (the placeholder's rank is known). The run-time shape vector is the real one;
    `rank + 1` entries of `-1` appended to it make its first `rank + 1` entries
    readable at any rank: the rank is `rank` when entry `rank − 1` is a size
    (`≥ 0`) and entry `rank` is one of the `-1`s.
    """
    import tensorflow as tf

    shape = tf.concat([tf.shape(value), tf.fill([rank + 1], -1)], axis=0)
    has_rank = tf.logical_and(shape[rank - 1] >= 0, tf.equal(shape[rank], -1))
    with tf.control_dependencies([tf.debugging.Assert(has_rank, [message])]):
        return tf.identity(value)


def assert_batch_of_strings(name, value):
    """`value` as `[batch]`, checked at run time (a scalar, `[1, 1]` or any other
    rank fails with "`name` must be a 1-D string tensor of shape [batch]")."""
    import tensorflow as tf

    value = assert_rank(value, 1, f"`{name}` must be a 1-D string tensor of shape [batch]")
    return tf.reshape(value, [-1])


def text_signature(*names):
    """The input signature of a text endpoint: one string `[batch]` per name."""
    return [keras.InputSpec(shape=(None,), dtype="string", name=name) for name in names]


def is_blank(text):
    """`tf.bool [B]`: whether each string is empty or only whitespace (the ASCII
    whitespace `models.text` collapses), which a text signature answers as empty."""
    import tensorflow as tf

    return tf.strings.regex_full_match(text, "[ \\t\\n\\r\\f\\v]*")


def lookup_table(vocab_tokens):
    """token → id table; unseen tokens → `[UNK]`."""
    import tensorflow as tf

    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(vocab_tokens[len(SPECIALS):]),
            tf.range(len(SPECIALS), len(vocab_tokens), dtype=tf.int32),
        ),
        default_value=UNK_ID,
    )


def lowercase(text):
    """`tf.strings.lower` in UTF-8 that keeps what follows a NUL character.

    `tf.strings.lower(..., encoding="utf-8")` ends each string at its first NUL (ICU is
    handed a C string), so `"a\\x00B"` would lose `"B"`. The pieces between NULs are
    lowercased one by one, each given back its NUL, joined, and the last NUL dropped.
    (`reduce_join`'s `separator` is cut at a NUL too, so it cannot rejoin them.)
    """
    import tensorflow as tf

    pieces = tf.strings.split(text, sep="\x00")
    lowered = tf.ragged.map_flat_values(tf.strings.lower, pieces, encoding="utf-8")
    joined = tf.strings.reduce_join(lowered + "\x00", axis=-1)
    length = tf.strings.length(joined)
    return tf.strings.substr(joined, tf.zeros_like(length), length - 1)


def word_pieces(words, table, longest_piece):
    """`tf.string [N]` words → their WordPiece ids `[N, None]` (ragged), as
    `Vocabulary.word_pieces` cuts them: at each position the longest piece in
    `table` (`##`-prefixed after a word's start) of at most `longest_piece`
    characters; a word with an uncovered position, or longer than
    `MAX_WORD_CHARS`, is one `[UNK]`. Every word advances at least one character
    a round, so the loop runs at most as many rounds as the longest word has
    characters, each round looking up every candidate length at once."""
    import tensorflow as tf

    words = tf.convert_to_tensor(words, tf.string)
    lengths = tf.strings.length(words, unit="UTF8_CHAR")
    too_long = lengths > MAX_WORD_CHARS
    candidates = tf.range(longest_piece, 0, -1)  # longest first
    wide = tf.repeat(tf.expand_dims(words, 1), longest_piece, axis=1)

    def round_(i, start, failed, pieces):
        active = tf.logical_and(start < lengths, tf.logical_not(failed))
        begin = tf.repeat(tf.expand_dims(start, 1), longest_piece, axis=1)
        size = tf.broadcast_to(candidates, tf.shape(begin))
        text = tf.strings.substr(wide, begin, size, unit="UTF8_CHAR")
        text = tf.where(begin > 0, CONTINUATION + text, text)
        found = table.lookup(text)
        known = tf.logical_and(found >= len(SPECIALS),
                               begin + size <= tf.expand_dims(lengths, 1))
        any_known = tf.reduce_any(known, axis=1)
        first = tf.argmax(tf.cast(known, tf.int32), axis=1, output_type=tf.int32)
        piece = tf.gather(found, first, batch_dims=1)
        emit = tf.logical_and(active, any_known)
        pieces = pieces.write(i, tf.where(emit, piece, -1))
        start = tf.where(emit, start + tf.gather(candidates, first), start)
        failed = tf.logical_or(failed, tf.logical_and(active, tf.logical_not(any_known)))
        return i + 1, start, failed, pieces

    rounds = tf.reduce_max(tf.concat([tf.where(too_long, 0, lengths), [0]], 0))
    _, _, failed, pieces = tf.while_loop(
        lambda i, *_: i < rounds,
        round_,
        (tf.constant(0), tf.where(too_long, lengths, 0), too_long,
         tf.TensorArray(tf.int32, size=rounds, element_shape=[None])),
    )
    # No rounds (only empty words, or none, as a batch of blank strings gives): an
    # empty TensorArray cannot stack with an unknown element shape.
    count = tf.shape(words)[0]
    stacked = tf.cond(rounds > 0, pieces.stack, lambda: tf.zeros([0, count], tf.int32))
    ids = tf.transpose(stacked)  # [N, rounds]
    # One more column, so that even with no rounds a word has a slot for [UNK].
    ids = tf.concat([ids, tf.fill([count, 1], -1)], axis=1)
    first_column = tf.equal(tf.range(tf.shape(ids)[1]), 0)
    ids = tf.where(tf.expand_dims(failed, 1), tf.where(first_column, UNK_ID, -1), ids)
    return tf.ragged.boolean_mask(ids, ids >= 0)  # -1: after a word's end


def tokenize(text, table, preprocess, max_length, longest_piece=None):
    """`tf.string [B]` → int32 ids `[B, max_length]`, as `models.text` does it.

    `longest_piece` (subword level): `Vocabulary.longest_piece`."""
    import tensorflow as tf

    text = tf.convert_to_tensor(text, tf.string)
    if preprocess.get("lowercase"):
        text = lowercase(text)
    if preprocess.get("space_punctuation"):
        text = tf.strings.regex_replace(text, r"([.?!,¿¡;:])", r" \1 ")
    if preprocess.get("collapse_whitespace"):
        text = tf.strings.regex_replace(text, r"[ \t\n\r\f\v]+", " ")
        text = tf.strings.regex_replace(text, r"^ | $", "")
    if preprocess["level"] == "char":
        pieces = tf.strings.unicode_split(text, "UTF-8")
    else:
        pieces = tf.strings.split(text, sep=" ")
        pieces = tf.ragged.boolean_mask(pieces, tf.strings.length(pieces) > 0)
    if preprocess["level"] == "subword":
        ids = pieces.with_flat_values(word_pieces(pieces.flat_values, table, longest_piece))
        return ids.merge_dims(1, 2).to_tensor(default_value=0, shape=[None, max_length])
    return table.lookup(pieces).to_tensor(default_value=0, shape=[None, max_length])


def detokenize(tokens, vocab_tokens, preprocess):
    """int ids `[B, L]` → strings: tokens before the first `[END]`, specials dropped,
    joined as `models.text` joins them (`Vocabulary.decode`, then `detokenize`)."""
    import tensorflow as tf

    shown = ["", "[UNK]", "", ""] + list(vocab_tokens[len(SPECIALS):])
    pieces = tf.gather(tf.constant(shown), tokens)
    before_end = tf.equal(tf.cumsum(tf.cast(tf.equal(tokens, END_ID), tf.int32), axis=1), 0)
    pieces = tf.where(before_end, pieces, "")
    if preprocess["level"] == "char":
        return tf.strings.reduce_join(pieces, axis=1)
    kept = tf.ragged.boolean_mask(pieces, tf.strings.length(pieces) > 0)
    text = tf.strings.reduce_join(kept, axis=1, separator=" ")
    if preprocess["level"] == "subword":
        text = tf.strings.regex_replace(text, " " + re.escape(CONTINUATION), "")
    if preprocess.get("space_punctuation"):
        text = tf.strings.regex_replace(text, SPACED_CLOSING.pattern, r"\1")
        text = tf.strings.regex_replace(text, SPACED_OPENING.pattern, r"\1")
    return text
