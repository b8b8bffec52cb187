"""The memory network's served SavedModel, and the bAbI graph operations it shares
with the DNC's (TensorFlow backend).

`serving_default(story, question)`: each example's sentences separated by newlines,
oldest first, and its question, both `tf.string [batch]`, normalised and tokenised in
the graph as `MemN2NPreprocessor.encode` does (property tests hold the two equal);
returns `answer` (cased as `preprocessor.cased_answer` writes it; empty for an empty
or blank question), its `probability` and `hop_attention`.
"""

import json
import os

import keras
import tensorflow as tf

from keras_attn.models.configured import META_FORMAT
from keras_attn.models.serving_ops import (
    assert_batch_of_strings,
    is_blank,
    lookup_table,
    lowercase,
)


def normalize_words(text):
    """`tf.string` → the `preprocessor.normalize` form: lowercase `[a-z0-9]` runs."""
    text = lowercase(text)
    text = tf.strings.regex_replace(text, "[^a-z0-9]+", " ")
    return tf.strings.regex_replace(text, "^ | $", "")


def story_memory(story, table, memory_size, sentence_length):
    """`tf.string [B]` stories (sentences on lines) → ids `[B, memory_size, sentence_length]`.

    As `MemN2NPreprocessor.encode`: sentences without a token are dropped, the
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
    """`tf.string [B]` → ids `[B, question_length]`, as `MemN2NPreprocessor.encode`."""
    # Without `sep`, an empty string splits into no word (with sep=" ", into one "").
    words = tf.strings.split(normalize_words(question))
    return table.lookup(words).to_tensor(default_value=0, shape=[None, question_length])


def same_batch(story, question):
    """`story` and `question` checked as `[batch]` strings of one batch size."""
    story = assert_batch_of_strings("story", story)
    question = assert_batch_of_strings("question", question)
    with tf.control_dependencies([tf.debugging.assert_equal(
        tf.shape(story)[0], tf.shape(question)[0],
        message="`story` and `question` must have the same batch size",
    )]):
        return tf.identity(story), question


class AnswerCase(tf.Module):
    """As `preprocessor.cased_answer`, in the graph: answer tokens `[B]` in the case their
    story writes them inside a sentence (the most recent use; a line's first word is
    capitalised whatever it is), else in the training data's most frequent form,
    else as they are; each part of a list answer on its own."""

    def __init__(self, forms):
        super().__init__()
        keys = list(forms) or [""]
        self.forms = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(keys), tf.constant([forms.get(k, "") for k in keys])),
            default_value="")

    def __call__(self, answers, story):
        parts = tf.strings.split(answers, sep=",")  # [B, parts]
        lines = tf.strings.split(story, sep="\n")  # [B, sentences]
        words = tf.strings.split(tf.ragged.map_flat_values(
            lambda line: tf.strings.strip(tf.strings.regex_replace(line, "[^A-Za-z0-9]+", " ")),
            lines))  # [B, sentences, words]
        written = words.with_values(words.values[:, 1:]).merge_dims(1, 2)  # [B, words]
        rows = parts.value_rowids()
        candidates = tf.gather(written, rows)  # each part's story words
        # ASCII lower-casing: `written` holds only ASCII letters and digits.
        same = tf.equal(tf.strings.lower(candidates), tf.expand_dims(parts.values, 1))
        # 1 + the position of the most recent use, 0 for none.
        position = tf.ragged.range(candidates.row_lengths()) + 1
        last = tf.maximum(tf.reduce_max(tf.cast(same, tf.int64) * position, axis=1), 0)
        found = last > 0
        words = tf.concat([candidates.values, [""]], axis=0)  # "" where none is found
        from_story = tf.gather(words, tf.where(found, candidates.row_starts() + last - 1,
                                               tf.size(candidates.values, tf.int64)))
        from_data = self.forms.lookup(parts.values)
        fallback = tf.where(tf.equal(from_data, ""), parts.values, from_data)
        cased = parts.with_flat_values(tf.where(found, from_story, fallback))
        return tf.strings.reduce_join(cased, axis=1, separator=",")


def answer_of(logits, answers, answer_case, story, question):
    """The answer and its probability; an empty or blank question (nothing asked)
    gets an empty answer of probability 0."""
    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
    best = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    asked = tf.logical_not(is_blank(question))
    return {"answer": tf.where(asked, answer_case(tf.gather(answers, best), story), ""),
            "probability": tf.where(asked, tf.reduce_max(probabilities, axis=-1), 0.0)}


def story_question_archive(tracked, serve):
    export = keras.export.ExportArchive()
    for item in tracked:
        export.track(item)
    export.add_endpoint(
        "serving_default",
        serve,
        input_signature=[
            tf.TensorSpec([None], tf.string, name="story"),
            tf.TensorSpec([None], tf.string, name="question"),
        ],
    )
    return export


def check_backend():
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("export runs on the TensorFlow backend (KERAS_BACKEND=tensorflow)")


def serving_archive(reader, preprocessor):
    """The bAbI QA model's `keras.export.ExportArchive` with its `MemN2NPreprocessor`;
    `reader` is the model returning its hops' attention too (`with_attention(model)`).

    `serving_default(story, question)`: `story` holds each example's sentences
    separated by newlines, oldest first; returns `answer` (the most probable of the
    model's candidates), its `probability` and `hop_attention`
    `[B, hops, memory_size]` over the kept sentences, most recent first.
    """
    check_backend()
    table = lookup_table(preprocessor.vocabulary.tokens)
    answers = tf.constant(preprocessor.vocabulary.tokens)
    answer_case = AnswerCase(preprocessor.forms)

    def serve(story, question):
        story, question = same_batch(story, question)
        story_ids = story_memory(story, table, preprocessor.memory_size,
                                 preprocessor.sentence_length)
        logits, attention = reader({
            "story": story_ids,
            "question": question_ids(question, table, preprocessor.question_length),
        })
        return (answer_of(logits, answers, answer_case, story, question)
                | {"hop_attention": tf.cast(attention, tf.float32)})

    return story_question_archive((reader, table, answer_case.forms), serve)


def write_assets(model, preprocessor, path):
    """`assets.extra/` of an export written by `model.export`, as the command line's
    exports have it: the `.keras` model, the vocabulary, the answers' forms and
    `meta.json`, for `keras-attn predict`, `evaluate` and `explore`."""
    extra = os.path.join(path, "assets.extra")
    os.makedirs(extra, exist_ok=True)
    preprocessor.vocabulary.save(os.path.join(extra, "vocab.json"))
    with open(os.path.join(extra, "forms.json"), "w", encoding="utf-8") as f:
        json.dump(preprocessor.forms, f, ensure_ascii=False, indent=0)
    model.save(os.path.join(extra, "model.keras"))
    config = {k: v for k, v in model.get_config().items() if k != "preprocessor"}
    settings = {"source": {"kind": "script"}, "names": {},
                **{name: getattr(preprocessor, name)
                   for name in ("memory_size", "sentence_length", "question_length")}}
    meta = {"task": "memn2n", "name": model.name, "config": config, "settings": settings,
            "data": {"source": "script"}, "training": {}, "format": META_FORMAT}
    with open(os.path.join(extra, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2, ensure_ascii=False)
    return path
