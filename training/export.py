"""SavedModel export for TF Serving, and the serving configuration.

This module (with the serving checks) is the only project code that imports
TensorFlow; it runs on the TensorFlow Keras backend. Exports go to
`<root>/<model>/<version>/`, written to a temporary folder beside it and renamed,
so TF Serving (which polls `<root>/<model>/`) never sees half a version.

The `serving_default` signatures take raw strings and repeat the training
preprocessing inside the graph, equal to it (property tests check both):
the translator's `tokenize` as `training.text` (code-point or space-separated
word tokens, `[UNK]` for unseen tokens, padding and truncation to the trained
maximum source length; inputs expected in NFC, as TF has no Unicode
normalisation op), and the memory network's `story_memory` as
`training.data.babi`.
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


def write_export(export_root, name, archive, model, meta, vocabularies, run_files=()):
    """Writes `archive` as the next version of `export_root/name`, atomically.

    `assets.extra/` gets what fine-tuning and `evaluate` need: the `.keras`
    model, each `{file name: Vocabulary}`, `meta.json`, and the `run_files`
    (paths of files or folders from the run directory) that exist.
    """

    def write(tmp):
        archive.write_out(tmp, verbose=False)
        extra = os.path.join(tmp, "assets.extra")
        os.makedirs(extra, exist_ok=True)
        model.save(os.path.join(extra, "model.keras"))
        for file_name, vocab in vocabularies.items():
            vocab.save(os.path.join(extra, file_name))
        with open(os.path.join(extra, "meta.json"), "w") as f:
            json.dump(meta, f, indent=2)
        for path in run_files:
            target = os.path.join(extra, os.path.basename(path))
            if os.path.isdir(path):
                shutil.copytree(path, target)
            elif os.path.exists(path):
                shutil.copy(path, target)

    return write_atomically(os.path.join(export_root, name), write)


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


def tokenize(text, table, preprocess, max_length):
    """`tf.string [B]` → int32 ids `[B, max_length]`, as `training.text` does it."""
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

    return write_export(
        export_root, name, archive, model, meta,
        {"source_vocab.json": source_vocab, "target_vocab.json": target_vocab},
        [os.path.join(run_dir, "test.tsv")] if run_dir else (),
    )


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


def normalize_words(text):
    """`tf.string` → the `training.data.babi.normalize` form: lowercase `[a-z0-9]` runs."""
    text = lowercase(text)
    text = tf.strings.regex_replace(text, "[^a-z0-9]+", " ")
    return tf.strings.regex_replace(text, "^ | $", "")


def story_memory(story, table, memory_size, sentence_length):
    """`tf.string [B]` stories (sentences on lines) → ids `[B, memory_size, sentence_length]`.

    As `training.data.babi.vectorize`: sentences without a token are dropped, the
    `memory_size` most recent are kept, most recent first, each truncated to
    `sentence_length` words.
    """
    lines = tf.strings.split(story, sep="\n")
    lines = tf.ragged.map_flat_values(normalize_words, lines)
    lines = tf.ragged.boolean_mask(lines, tf.strings.length(lines) > 0)
    lengths = lines.row_lengths()
    position = tf.ragged.range(lengths)
    reverse = tf.expand_dims(lines.row_starts(), 1) + tf.expand_dims(lengths, 1) - 1 - position
    recent_first = tf.RaggedTensor.from_row_lengths(
        tf.gather(lines.values, reverse.flat_values), lengths
    )[:, :memory_size]
    words = tf.strings.split(recent_first)
    return tf.ragged.map_flat_values(table.lookup, words).to_tensor(
        default_value=0, shape=[None, memory_size, sentence_length]
    )


def question_ids(question, table, question_length):
    """`tf.string [B]` → ids `[B, question_length]`, as `training.data.babi.vectorize`."""
    # Without `sep`, an empty string splits into no word (with sep=" ", into one "").
    words = tf.strings.split(normalize_words(question))
    return table.lookup(words).to_tensor(default_value=0, shape=[None, question_length])


def _assert_batch_of_strings(name, value):
    """A run-time check that `value` is 1-D (see `export_translator`)."""
    shape = tf.shape(value)
    message = f"`{name}` must be a 1-D string tensor of shape [batch]"
    with tf.control_dependencies([
        tf.debugging.assert_equal(tf.size(value), shape[0], message=message),
        tf.debugging.assert_equal(shape[-1], shape[0], message=message),
    ]):
        return tf.identity(value)


def export_memn2n(model, vocab, meta, export_root, name, run_dir=None):
    """Writes the bAbI QA model's SavedModel (plus its `.keras`, vocabulary, meta).

    `serving_default(story, question)`: `story` holds each example's sentences
    separated by newlines, oldest first; returns `answer` (the most probable of
    the answers seen in training), its `probability` and `hop_attention`
    `[B, hops, memory_size]` over the kept sentences, most recent first.
    """
    import keras

    from models.memn2n import with_attention

    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("export runs on the TensorFlow backend (KERAS_BACKEND=tensorflow)")
    reader = with_attention(model)
    memory_size, sentence_length = int(meta["memory_size"]), int(meta["sentence_length"])
    question_length = int(meta["question_length"])
    table = lookup_table(vocab.tokens)
    answers = tf.constant(vocab.tokens)

    def serve(story, question):
        story = _assert_batch_of_strings("story", story)
        question = _assert_batch_of_strings("question", question)
        with tf.control_dependencies([tf.debugging.assert_equal(
            tf.shape(story)[0], tf.shape(question)[0],
            message="`story` and `question` must have the same batch size",
        )]):
            story = tf.identity(story)
        story_ids = story_memory(story, table, memory_size, sentence_length)
        logits, attention = reader({
            "story": story_ids, "question": question_ids(question, table, question_length)
        })
        probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
        best = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        return {
            "answer": tf.gather(answers, best),
            "probability": tf.reduce_max(probabilities, axis=-1),
            "hop_attention": tf.cast(attention, tf.float32),
        }

    archive = keras.export.ExportArchive()
    archive.track(reader)
    archive.track(table)
    archive.add_endpoint(
        "serving_default",
        serve,
        input_signature=[
            tf.TensorSpec([None], tf.string, name="story"),
            tf.TensorSpec([None], tf.string, name="question"),
        ],
    )

    return write_export(
        export_root, name, archive, model, meta, {"vocab.json": vocab},
        [os.path.join(run_dir, "test")] if run_dir else (),
    )


def export_ntm(model, meta, export_root, name, run_dir=None):
    """Writes an NTM's or a DNC's bit-sequence model's SavedModel (plus its
    `.keras`, meta).

    `serving_default(sequence)`, `sequence` float32 `[batch, steps, input_bits]`
    in the task's layout (any number of steps, longer than trained included):
    returns `output` (bit probabilities `[batch, steps, output_bits]`),
    `read_weightings` and `write_weightings` (`[batch, steps, heads, memory_size]`)
    and `valid` (`[batch]`). Defined results for bad input: a sequence holding NaN
    or an infinity is not run (`valid` false, its outputs and weightings 0; the
    other sequences are unaffected); zero steps give empty outputs; the wrong
    number of channels is refused (`InvalidArgumentError` naming the layout).
    """
    import keras

    from models.ntm import with_weightings

    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("export runs on the TensorFlow backend (KERAS_BACKEND=tensorflow)")
    reader = with_weightings(model)
    input_bits, output_bits = int(meta["input_bits"]), int(meta["output_bits"])
    memory_size = int(meta["memory_size"])
    # A DNC has one write head and no `write_heads` entry.
    read_heads, write_heads = int(meta["read_heads"]), int(meta.get("write_heads", 1))

    def serve(sequence):
        # A loaded signature lets other shapes through to the RNN, which fails
        # obscurely; the run-time shape check names the layout instead.
        with tf.control_dependencies([tf.debugging.assert_equal(
            tf.shape(sequence)[-1], input_bits,
            message=f"`sequence` must be [batch, steps, {input_bits}]: {input_bits} channels a "
                    "step, as trained",
        )]):
            sequence = tf.identity(sequence)
        finite = tf.math.is_finite(sequence)
        valid = tf.reduce_all(finite, axis=[1, 2])
        clean = tf.where(finite, sequence, 0.0)
        batch, steps = tf.shape(sequence)[0], tf.shape(sequence)[1]

        def run():
            return [tf.cast(t, tf.float32) for t in reader(clean)]

        def nothing():
            return [tf.zeros([batch, 0, output_bits]),
                    tf.zeros([batch, 0, read_heads, memory_size]),
                    tf.zeros([batch, 0, write_heads, memory_size])]

        # The RNN needs a first step to trace its loop; zero steps skip it.
        outputs = tf.cond(steps > 0, run, nothing)
        kept = tf.cast(valid, tf.float32)[:, None, None]
        output, reads, writes = outputs
        return {"output": output * kept, "read_weightings": reads * kept[..., None],
                "write_weightings": writes * kept[..., None], "valid": valid}

    archive = keras.export.ExportArchive()
    archive.track(reader)
    archive.add_endpoint(
        "serving_default", serve,
        input_signature=[tf.TensorSpec([None, None, input_bits], tf.float32, name="sequence")],
    )
    return write_export(export_root, name, archive, model, meta, {},
                        [os.path.join(run_dir, "curve.json")] if run_dir else ())


def export_pointer(model, meta, export_root, name, run_dir=None):
    """Writes a pointer network's SavedModel (plus its `.keras`, meta).

    Signatures:
    - `serving_default(points, lengths)`: `points` float32 `[batch, N, D]`,
      `lengths` int32 `[batch]` (the real points of each row; those after it are
      padding and ignored);
    - `all_points(points)`: every row uses all `N` points.

    Both return `indices` int32 `[batch, N']` (`N' = min(N, max_points)`) in output
    order, `-1` after the end; `log_prob` float32 `[batch]`; `pointer` float32
    `[batch, N' + 1, N' + 1]`, each step's distribution over `[END, x_1 … x_N']`;
    and `valid` bool `[batch]`. The decoder is the run's (`beam_width`; for TSP the
    shortest tour of the beam). Defined results for bad input: a row is decoded
    only if `1 ≤ length ≤ min(N, max_points)` and its real points are finite;
    otherwise `valid` is false, its indices are -1 and `log_prob` and `pointer`
    0, and the other rows are unaffected. `N = 0` gives `[batch, 0]` indices. The
    wrong `D`, or `lengths` of another batch size, is refused
    (`InvalidArgumentError` naming the layout). Duplicate points still give a
    permutation (or, for the hull, distinct indices): chosen positions are masked.
    """
    import keras

    from models.pointer_net import decode

    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("export runs on the TensorFlow backend (KERAS_BACKEND=tensorflow)")
    point_dim, supported = int(meta["point_dim"]), int(meta["max_points"])
    beam_width = int(meta.get("beam_width", 1))
    select = "tour_length" if meta.get("start_index") is not None else "log_prob"

    def run(points, lengths):
        with tf.control_dependencies([
            tf.debugging.assert_equal(
                tf.shape(points)[-1], point_dim,
                message=f"`points` must be [batch, N, {point_dim}]: {point_dim} coordinate(s) "
                        "a point, as trained"),
            tf.debugging.assert_equal(
                tf.size(lengths), tf.shape(points)[0],
                message="`lengths` must be [batch]: one length per point set"),
        ]):
            points = tf.identity(points[:, :supported])
        lengths = tf.reshape(lengths, [-1])
        batch, n = tf.shape(points)[0], tf.shape(points)[1]
        real = tf.range(n)[None, :] < lengths[:, None]
        finite = tf.reduce_all(tf.math.is_finite(points), axis=-1)
        valid = tf.logical_and(tf.logical_and(lengths >= 1, lengths <= n),
                               tf.reduce_all(tf.logical_or(finite, tf.logical_not(real)), axis=1))
        kept = tf.logical_and(real, valid[:, None])
        clean = tf.where(kept[..., None], points, 0.0)
        safe_lengths = tf.where(valid, lengths, 1)

        def decoded():
            out = decode(model, clean, safe_lengths, beam_width=beam_width, select=select)
            return (tf.cast(out["indices"], tf.int32), tf.cast(out["log_prob"], tf.float32),
                    tf.cast(out["pointer"], tf.float32))

        def nothing():
            return (tf.zeros([batch, 0], tf.int32), tf.zeros([batch], tf.float32),
                    tf.zeros([batch, 1, 1], tf.float32))

        indices, log_prob, pointer = tf.cond(n > 0, decoded, nothing)
        return {"indices": tf.where(valid[:, None], indices, -1),
                "log_prob": tf.where(valid, log_prob, 0.0),
                "pointer": pointer * tf.cast(valid, tf.float32)[:, None, None],
                "valid": valid}

    def all_points(points):
        return run(points, tf.fill(tf.shape(points)[:1], tf.shape(points)[1]))

    points_spec = tf.TensorSpec([None, None, point_dim], tf.float32, name="points")
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serving_default", run, input_signature=[
        points_spec, tf.TensorSpec([None], tf.int32, name="lengths")])
    archive.add_endpoint("all_points", all_points, input_signature=[points_spec])
    return write_export(export_root, name, archive, model, meta, {},
                        [os.path.join(run_dir, "history.json")] if run_dir else ())
