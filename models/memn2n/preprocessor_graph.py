"""The bAbI text rules in a TensorFlow graph: `MemN2NPreprocessor`'s graph half.

Stories (sentences separated by newlines, oldest first) and questions, both
`tf.string [batch]`, normalised and tokenised as `MemN2NPreprocessor.encode` does
(property tests hold the two equal); answers written back as
`preprocessor.cased_answer` writes them. Imported only by the preprocessor's
graph methods, where text becomes ids; each function imports TensorFlow itself,
when it runs.
"""

from keras_attn.models.preprocessor_graph import (
    assert_batch_of_strings,
    is_blank,
    lowercase,
)


def normalize_words(text):
    """`tf.string` → the `preprocessor.normalize` form: lowercase `[a-z0-9]` runs."""
    import tensorflow as tf

    text = lowercase(text)
    text = tf.strings.regex_replace(text, "[^a-z0-9]+", " ")
    return tf.strings.regex_replace(text, "^ | $", "")


def story_memory(story, table, memory_size, sentence_length):
    """`tf.string [B]` stories (sentences on lines) → ids `[B, memory_size, sentence_length]`.

    As `MemN2NPreprocessor.encode`: sentences without a token are dropped, the
    `memory_size` most recent are kept, most recent first, each truncated to
    `sentence_length` words.
    """
    import tensorflow as tf

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
    import tensorflow as tf

    # Without `sep`, an empty string splits into no word (with sep=" ", into one "").
    words = tf.strings.split(normalize_words(question))
    return table.lookup(words).to_tensor(default_value=0, shape=[None, question_length])


def same_batch(story, question):
    """`story` and `question` checked as `[batch]` strings of one batch size."""
    import tensorflow as tf

    story = assert_batch_of_strings("story", story)
    question = assert_batch_of_strings("question", question)
    with tf.control_dependencies([tf.debugging.assert_equal(
        tf.shape(story)[0], tf.shape(question)[0],
        message="`story` and `question` must have the same batch size",
    )]):
        return tf.identity(story), question


def forms_table(forms):
    """`{token: written form}` (`surface_forms`) as a lookup table; unknown → `""`."""
    import tensorflow as tf

    keys = list(forms) or [""]
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys), tf.constant([forms.get(k, "") for k in keys])),
        default_value="")


def cased_answers(answers, story, forms):
    """As `preprocessor.cased_answer`, in the graph: answer tokens `[B]` in the case their
    story writes them inside a sentence (the most recent use; a line's first word is
    capitalised whatever it is), else in the training data's most frequent form
    (`forms`, a `forms_table`), else as they are; each part of a list answer on its
    own."""
    import tensorflow as tf

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
    from_data = forms.lookup(parts.values)
    fallback = tf.where(tf.equal(from_data, ""), parts.values, from_data)
    cased = parts.with_flat_values(tf.where(found, from_story, fallback))
    return tf.strings.reduce_join(cased, axis=1, separator=",")


def answer_of(logits, answers, forms, story, question):
    """The answer (`answers[argmax]`, cased by `cased_answers` with the `forms_table`
    `forms`) and its probability; an empty or blank question (nothing asked) gets an
    empty answer of probability 0."""
    import tensorflow as tf

    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
    best = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    asked = tf.logical_not(is_blank(question))
    return {"answer": tf.where(asked, cased_answers(tf.gather(answers, best), story, forms), ""),
            "probability": tf.where(asked, tf.reduce_max(probabilities, axis=-1), 0.0)}


def word_sequence(story, question, table, max_story_words):
    """As `DNCQAPreprocessor.encode` (`word_tokens`): `tf.string [B]` stories and
    questions → right-padded ids `[B, T]` of the most recent `max_story_words`
    story words (each sentence followed by `.`), the question and `?`; and the
    step of the `?` `[B]`."""
    import tensorflow as tf

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
