"""SavedModel export for TF Serving: what every task's export shares.

This module, the tasks' `export.py` modules and the serving checks are the only
project code that imports TensorFlow; they run on the TensorFlow Keras backend.
Exports go to `<root>/<model>/<version>/`, written to a temporary folder beside
it and renamed, so TF Serving (which polls `<root>/<model>/`) never sees half a
version, with the modes the umask gives (another user's server can read them).

The text signatures take raw strings and repeat the training preprocessing of
`keras_attn.training.text` inside the graph, equal to it (property tests check
it): code-point, space-separated word or WordPiece tokens, `[UNK]` for unseen
ones, padding and truncation to the trained maximum; inputs are expected in
NFC, as TensorFlow has no Unicode normalisation op.
"""

import os
import re
import shutil
import tempfile

import tensorflow as tf

from keras_attn.training.text import (
    CONTINUATION,
    END_ID,
    MAX_WORD_CHARS,
    SPACED_CLOSING,
    SPACED_OPENING,
    SPECIALS,
    UNK_ID,
)

_loaded = {}


def loaded_signature(version_dir, name="serving_default"):
    """`tf.saved_model.load(version_dir).signatures[name]`, loaded once per process
    (a load takes seconds; the explore page answers each request from this)."""
    key = os.path.realpath(version_dir)
    if key not in _loaded:
        _loaded[key] = tf.saved_model.load(version_dir)
    return _loaded[key].signatures[name]


def next_version(model_root):
    """1 + the largest numeric version folder under `model_root` (1 if none)."""
    if not os.path.isdir(model_root):
        return 1
    versions = [int(n) for n in os.listdir(model_root) if n.isdigit()]
    return max(versions, default=0) + 1


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def publishable(folder):
    """Gives `folder` and everything in it the modes a new file or folder gets under
    the umask (`mkdtemp` makes its folder owner-only, `0o700`, whatever the umask)."""
    mask = _umask()
    os.chmod(folder, 0o777 & ~mask)
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o777 & ~mask)
        for name in files:
            path = os.path.join(root, name)
            os.chmod(path, (0o777 if os.access(path, os.X_OK) else 0o666) & ~mask)


TMP_PREFIX = ".tmp-export-"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_exports(model_root):
    """Removes the temporary folders that killed exports left in `model_root`.

    Each is named `.tmp-export-<pid>-…` after the process writing it; one whose
    process is gone is stale (a live one is another export under way)."""
    for name in os.listdir(model_root):
        if not name.startswith(TMP_PREFIX):
            continue
        pid = name[len(TMP_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(model_root, name), ignore_errors=True)


def write_atomically(model_root, write_fn):
    """Calls `write_fn(tmp_dir)`, then renames `tmp_dir` to the next version."""
    os.makedirs(model_root, exist_ok=True)
    remove_stale_exports(model_root)
    tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", dir=model_root)
    try:
        write_fn(tmp)
        publishable(tmp)
        while True:
            target = os.path.join(model_root, str(next_version(model_root)))
            try:
                os.rename(tmp, target)  # atomic on one filesystem; fails if taken
                return target
            except OSError:
                if not os.path.exists(target):
                    raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_version(model_root, archive, files=()):
    """Writes `archive` as the next version of `model_root`, atomically, with the
    `files` (of the run folder: the `.keras` model, `meta.json`, the task's
    assets) copied into `assets.extra/` for `evaluate`, `predict` and fine-tuning."""

    def write(tmp):
        archive.write_out(tmp, verbose=False)
        extra = os.path.join(tmp, "assets.extra")
        os.makedirs(extra, exist_ok=True)
        for path in files:
            target = os.path.join(extra, os.path.basename(path))
            if os.path.isdir(path):
                shutil.copytree(path, target)
            elif os.path.exists(path):
                shutil.copy(path, target)

    return write_atomically(model_root, write)


def assert_rank(value, rank, message):
    """A run-time check that `value` has `rank` axes, failing with `message`.

    A loaded signature accepts other ranks, and a static rank check folds away
    (the placeholder's rank is known). The run-time shape vector is the real one;
    `rank + 1` entries of `-1` appended to it make its first `rank + 1` entries
    readable at any rank: the rank is `rank` when entry `rank − 1` is a size
    (`≥ 0`) and entry `rank` is one of the `-1`s.
    """
    shape = tf.concat([tf.shape(value), tf.fill([rank + 1], -1)], axis=0)
    has_rank = tf.logical_and(shape[rank - 1] >= 0, tf.equal(shape[rank], -1))
    with tf.control_dependencies([tf.debugging.Assert(has_rank, [message])]):
        return tf.identity(value)


def assert_batch_of_strings(name, value):
    """`value` as `[batch]`, checked at run time (a scalar, `[1, 1]` or any other
    rank fails with "`name` must be a 1-D string tensor of shape [batch]")."""
    value = assert_rank(value, 1, f"`{name}` must be a 1-D string tensor of shape [batch]")
    return tf.reshape(value, [-1])


def is_blank(text):
    """`tf.bool [B]`: whether each string is empty or only whitespace (the ASCII
    whitespace `training.text` collapses), which a text signature answers as empty."""
    return tf.strings.regex_full_match(text, "[ \\t\\n\\r\\f\\v]*")


def lookup_table(vocab_tokens):
    """token → id table; unseen tokens → `[UNK]`."""
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
    ids = tf.reshape(tf.transpose(pieces.stack()), [tf.shape(words)[0], -1])  # [N, rounds]
    # One more column, so that even with no rounds a word has a slot for [UNK].
    ids = tf.concat([ids, tf.fill([tf.shape(words)[0], 1], -1)], axis=1)
    first_column = tf.equal(tf.range(tf.shape(ids)[1]), 0)
    ids = tf.where(tf.expand_dims(failed, 1), tf.where(first_column, UNK_ID, -1), ids)
    return tf.ragged.boolean_mask(ids, ids >= 0)  # -1: after a word's end


def tokenize(text, table, preprocess, max_length, longest_piece=None):
    """`tf.string [B]` → int32 ids `[B, max_length]`, as `training.text` does it.

    `longest_piece` (subword level): `Vocabulary.longest_piece`."""
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
    joined as `training.text` joins them (`Vocabulary.decode`, then `detokenize`)."""
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


def write_serving_config(export_root, base_path=None):
    """Writes `<root>/models.config` listing every model with a numeric version.

    Each `base_path` is the folder the server will see: `base_path/<model>` when
    given (`/models` for a container that mounts `export_root` there), else the
    model folder's absolute path on this machine.
    """
    entries = []
    for name in sorted(os.listdir(export_root)) if os.path.isdir(export_root) else []:
        base = os.path.join(export_root, name)
        if os.path.isdir(base) and any(v.isdigit() for v in os.listdir(base)):
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                raise ValueError(f"model folder name {name!r} is not a valid serving name")
            served = (base_path.rstrip("/") + "/" + name) if base_path else os.path.abspath(base)
            entries.append(
                "  config {\n"
                f'    name: "{name}"\n'
                f'    base_path: "{served}"\n'
                '    model_platform: "tensorflow"\n'
                "  }\n"
            )
    path = os.path.join(export_root, "models.config")
    os.makedirs(export_root, exist_ok=True)
    with open(path, "w") as f:
        f.write("model_config_list {\n" + "".join(entries) + "}\n")
    return path, len(entries)
