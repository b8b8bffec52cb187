"""The bAbI models' SavedModel signatures (TensorFlow backend).

`serving_default(story, question)`: each example's sentences separated by
newlines, oldest first, and its question, both `tf.string [batch]`, normalised
and tokenised in the graph as training does (`babi.vectorize` for the memory
network, `words.tokens_of` for the DNC).
"""

import keras
import tensorflow as tf

from keras_attn.models.memn2n import with_attention
from keras_attn.models.serving_ops import assert_batch_of_strings, lookup_table, lowercase


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


def word_sequence(story, question, table, max_story_words):
    """As `words.tokens_of`: `tf.string [B]` stories and questions → right-padded ids
    `[B, T]` of the most recent `max_story_words` story words (each sentence
    followed by `.`), the question and `?`; and the step of the `?` `[B]`."""
    lines = tf.strings.split(story, sep="\n")
    lines = tf.ragged.map_flat_values(normalize_words, lines)
    lines = tf.ragged.boolean_mask(lines, tf.strings.length(lines) > 0)
    sentences = tf.ragged.map_flat_values(lambda line: line + " .", lines)
    story_words = tf.strings.split(tf.strings.reduce_join(sentences, axis=1, separator=" "))
    lengths = story_words.row_lengths()
    kept = tf.ragged.range(tf.maximum(lengths - max_story_words, 0), lengths)
    story_words = tf.RaggedTensor.from_row_lengths(
        tf.gather(story_words.values,
                  (kept + tf.expand_dims(story_words.row_starts(), 1)).flat_values),
        kept.row_lengths(),
    )
    question_words = tf.strings.split(normalize_words(question) + " ?")
    sequence = tf.concat([story_words, question_words], axis=1)
    ids = tf.ragged.map_flat_values(table.lookup, sequence)
    return ids.to_tensor(default_value=0), tf.cast(ids.row_lengths() - 1, tf.int32)


def _same_batch(story, question):
    """`story` and `question` checked as `[batch]` strings of one batch size."""
    story = assert_batch_of_strings("story", story)
    question = assert_batch_of_strings("question", question)
    with tf.control_dependencies([tf.debugging.assert_equal(
        tf.shape(story)[0], tf.shape(question)[0],
        message="`story` and `question` must have the same batch size",
    )]):
        return tf.identity(story), question


class AnswerCase(tf.Module):
    """As `babi.cased_answer`, in the graph: answer tokens `[B]` in the case their
    story writes them (the most recent use), else in the training data's most
    frequent form, else as they are; each part of a list answer on its own."""

    def __init__(self, forms):
        super().__init__()
        keys = list(forms) or [""]
        self.forms = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(keys), tf.constant([forms.get(k, "") for k in keys])),
            default_value="")

    def __call__(self, answers, story):
        parts = tf.strings.split(answers, sep=",")  # [B, parts]
        written = tf.strings.split(tf.strings.strip(
            tf.strings.regex_replace(story, "[^A-Za-z0-9]+", " ")))  # [B, words]
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


def _answer_of(logits, answers, answer_case, story):
    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
    best = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    return {"answer": answer_case(tf.gather(answers, best), story),
            "probability": tf.reduce_max(probabilities, axis=-1)}


def _story_question_archive(tracked, serve):
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


def _check_backend():
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("export runs on the TensorFlow backend (KERAS_BACKEND=tensorflow)")


def dnc_archive(model, vocab, settings, forms=None):
    """The DNC bAbI model's `keras.export.ExportArchive` (`settings`: `RunMeta.settings`,
    `forms`: `babi.surface_forms` of the training data).

    `serving_default(story, question)` as the memory network's; returns `answer`
    (the most probable word, cased as `AnswerCase` says) and its `probability`.
    """
    _check_backend()
    table = lookup_table(vocab.tokens)
    answers = tf.constant(vocab.tokens)
    answer_case = AnswerCase(forms or {})
    max_story_words = int(settings["max_story_words"])

    def serve(story, question):
        story, question = _same_batch(story, question)
        ids, step = word_sequence(story, question, table, max_story_words)
        return _answer_of(model({"words": ids, "answer_step": step}), answers, answer_case,
                          story)

    return _story_question_archive((model, table, answer_case.forms), serve)


def archive(model, vocab, settings, forms=None):
    """The bAbI QA model's `keras.export.ExportArchive` (`settings`: `RunMeta.settings`).

    `serving_default(story, question)`: `story` holds each example's sentences
    separated by newlines, oldest first; returns `answer` (the most probable of
    the model's candidates: the vocabulary, or the answers seen in training),
    its `probability` and `hop_attention`
    `[B, hops, memory_size]` over the kept sentences, most recent first.
    """
    _check_backend()
    reader = with_attention(model)
    memory_size, sentence_length = int(settings["memory_size"]), int(settings["sentence_length"])
    question_length = int(settings["question_length"])
    table = lookup_table(vocab.tokens)
    answers = tf.constant(vocab.tokens)
    answer_case = AnswerCase(forms or {})

    def serve(story, question):
        story, question = _same_batch(story, question)
        story_ids = story_memory(story, table, memory_size, sentence_length)
        logits, attention = reader({
            "story": story_ids, "question": question_ids(question, table, question_length)
        })
        return (_answer_of(logits, answers, answer_case, story)
                | {"hop_attention": tf.cast(attention, tf.float32)})

    return _story_question_archive((reader, table, answer_case.forms), serve)
