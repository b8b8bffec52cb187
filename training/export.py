"""SavedModel export for TF Serving, and the serving configuration.

This module (with the serving checks) is the only project code that imports
TensorFlow; it runs on the TensorFlow Keras backend. Exports go to
`<root>/<model>/<version>/`, written to a temporary folder beside it and renamed,
so TF Serving (which polls `<root>/<model>/`) never sees half a version.

The translator's `serving_default` signature takes raw strings and does the
training preprocessing inside the graph (`tokenize`), equal to `training.text`:
code-point (or space-separated word) tokens, `[UNK]` for unseen tokens, padding
and truncation to the trained maximum source length. Inputs are expected in NFC
(TF has no Unicode-normalisation op); the loaders normalise training text to NFC.
"""

import json
import os
import re
import shutil
import tempfile

import tensorflow as tf

from training.text import END_ID, SPECIALS, UNK_ID


def next_version(model_root):
    """1 + the largest numeric version folder under `model_root` (1 if none)."""
    if not os.path.isdir(model_root):
        return 1
    versions = [int(n) for n in os.listdir(model_root) if n.isdigit()]
    return max(versions, default=0) + 1


def write_atomically(model_root, write_fn):
    """Calls `write_fn(tmp_dir)`, then renames `tmp_dir` to the next version."""
    os.makedirs(model_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-export-", dir=model_root)
    try:
        write_fn(tmp)
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


def lookup_table(vocab_tokens):
    """token → id table; unseen tokens → `[UNK]`."""
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(vocab_tokens[len(SPECIALS):]),
            tf.range(len(SPECIALS), len(vocab_tokens), dtype=tf.int32),
        ),
        default_value=UNK_ID,
    )


def tokenize(text, table, preprocess, max_length):
    """`tf.string [B]` → int32 ids `[B, max_length]`, as `training.text` does it."""
    text = tf.convert_to_tensor(text, tf.string)
    if preprocess.get("lowercase"):
        text = tf.strings.lower(text, encoding="utf-8")
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
    return table.lookup(pieces).to_tensor(default_value=0, shape=[None, max_length])


def detokenize(tokens, vocab_tokens, level):
    """int ids `[B, L]` → strings: tokens before the first `[END]`, specials dropped."""
    shown = ["", "[UNK]", "", ""] + list(vocab_tokens[len(SPECIALS):])
    pieces = tf.gather(tf.constant(shown), tokens)
    before_end = tf.equal(tf.cumsum(tf.cast(tf.equal(tokens, END_ID), tf.int32), axis=1), 0)
    pieces = tf.where(before_end, pieces, "")
    if level == "char":
        return tf.strings.reduce_join(pieces, axis=1)
    kept = tf.ragged.boolean_mask(pieces, tf.strings.length(pieces) > 0)
    return tf.strings.reduce_join(kept, axis=1, separator=" ")


def export_translator(model, source_vocab, target_vocab, meta, export_root, name, run_dir=None):
    """Writes the translator's SavedModel (plus its `.keras`, vocabularies, meta)."""
    import keras

    from models.translator import generate

    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("export runs on the TensorFlow backend (KERAS_BACKEND=tensorflow)")
    max_source = int(meta["max_source_length"])
    max_steps = int(meta["max_target_length"]) - 1
    beam_width = int(meta.get("beam_width", 1))
    preprocess = meta["preprocess"]
    # Built outside the endpoint, so the archive can track it.
    table = lookup_table(source_vocab.tokens)

    def serve(text):
        # A loaded signature accepts other ranks, and a static rank check folds
        # away (the placeholder says [None]). At run time the shape vector is the
        # real one: 1-D means size == shape[0] == shape[-1] (for a batch of 1, a
        # [1, 1] input passes and is served as the one string it holds).
        shape = tf.shape(text)
        message = "`text` must be a 1-D string tensor of shape [batch]"
        with tf.control_dependencies([
            tf.debugging.assert_equal(tf.size(text), shape[0], message=message),
            tf.debugging.assert_equal(shape[-1], shape[0], message=message),
        ]):
            text = tf.identity(text)
        ids = tokenize(text, table, preprocess, max_source)
        out = generate(model, ids, max_steps, beam_width=beam_width,
                       length_penalty=float(meta.get("length_penalty", 0.0)))
        translation = detokenize(out["tokens"], target_vocab.tokens, target_vocab.level)
        empty = tf.equal(tf.strings.length(text), 0)
        return {
            "translation": tf.where(empty, tf.constant(""), translation),
            "score": tf.where(empty, 0.0, tf.cast(out["scores"], tf.float32)),
            "alignment": tf.cast(out["alignments"], tf.float32),
        }

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(table)
    archive.add_endpoint(
        "serving_default", serve, input_signature=[tf.TensorSpec([None], tf.string, name="text")]
    )

    def write(tmp):
        archive.write_out(tmp, verbose=False)
        extra = os.path.join(tmp, "assets.extra")
        os.makedirs(extra, exist_ok=True)
        model.save(os.path.join(extra, "model.keras"))
        source_vocab.save(os.path.join(extra, "source_vocab.json"))
        target_vocab.save(os.path.join(extra, "target_vocab.json"))
        with open(os.path.join(extra, "meta.json"), "w") as f:
            json.dump(meta, f, indent=2)
        if run_dir and os.path.exists(os.path.join(run_dir, "test.tsv")):
            shutil.copy(os.path.join(run_dir, "test.tsv"), os.path.join(extra, "test.tsv"))

    return write_atomically(os.path.join(export_root, name), write)


def write_serving_config(export_root):
    """Writes `<root>/models.config` listing every model with a numeric version."""
    entries = []
    for name in sorted(os.listdir(export_root)) if os.path.isdir(export_root) else []:
        base = os.path.join(export_root, name)
        if os.path.isdir(base) and any(v.isdigit() for v in os.listdir(base)):
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                raise ValueError(f"model folder name {name!r} is not a valid serving name")
            entries.append(
                "  config {\n"
                f'    name: "{name}"\n'
                f'    base_path: "{os.path.abspath(base)}"\n'
                '    model_platform: "tensorflow"\n'
                "  }\n"
            )
    path = os.path.join(export_root, "models.config")
    os.makedirs(export_root, exist_ok=True)
    with open(path, "w") as f:
        f.write("model_config_list {\n" + "".join(entries) + "}\n")
    return path, len(entries)
