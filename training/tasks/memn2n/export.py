"""The memory network's SavedModel signature (TensorFlow backend).

`serving_default(story, question)`: each example's sentences separated by
newlines, oldest first, and its question, both `tf.string [batch]`, normalised
and tokenised in the graph as `babi.vectorize` does in training.
"""

import keras
import tensorflow as tf

from keras_attn.models.memn2n import with_attention
from keras_attn.training.export import assert_batch_of_strings, lookup_table, lowercase


def normalize_words(text):
    """`tf.string` → the `babi.normalize` form: lowercase `[a-z0-9]` runs."""
    text = lowercase(text)
    text = tf.strings.regex_replace(text, "[^a-z0-9]+", " ")
    return tf.strings.regex_replace(text, "^ | $", "")


def story_memory(story, table, memory_size, sentence_length):
    """`tf.string [B]` stories (sentences on lines) → ids `[B, memory_size, sentence_length]`.

    As `babi.vectorize`: sentences without a token are dropped, the
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
    """`tf.string [B]` → ids `[B, question_length]`, as `babi.vectorize`."""
    # Without `sep`, an empty string splits into no word (with sep=" ", into one "").
    words = tf.strings.split(normalize_words(question))
    return table.lookup(words).to_tensor(default_value=0, shape=[None, question_length])


def archive(model, vocab, settings):
    """The bAbI QA model's `keras.export.ExportArchive` (`settings`: `RunMeta.settings`).

    `serving_default(story, question)`: `story` holds each example's sentences
    separated by newlines, oldest first; returns `answer` (the most probable of
    the answers seen in training), its `probability` and `hop_attention`
    `[B, hops, memory_size]` over the kept sentences, most recent first.
    """
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("export runs on the TensorFlow backend (KERAS_BACKEND=tensorflow)")
    reader = with_attention(model)
    memory_size, sentence_length = int(settings["memory_size"]), int(settings["sentence_length"])
    question_length = int(settings["question_length"])
    table = lookup_table(vocab.tokens)
    answers = tf.constant(vocab.tokens)

    def serve(story, question):
        story = assert_batch_of_strings("story", story)
        question = assert_batch_of_strings("question", question)
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

    export = keras.export.ExportArchive()
    export.track(reader)
    export.track(table)
    export.add_endpoint(
        "serving_default",
        serve,
        input_signature=[
            tf.TensorSpec([None], tf.string, name="story"),
            tf.TensorSpec([None], tf.string, name="question"),
        ],
    )

    return export
