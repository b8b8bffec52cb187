"""The bAbI tasks' SavedModels (TensorFlow backend): the memory network's is its
model's own (`keras_attn.models.memn2n.export`), built from the run's files; the
DNC's reads the story and the question word by word.

`serving_default(story, question)`: each example's sentences separated by
newlines, oldest first, and its question, both `tf.string [batch]`, normalised
and tokenised in the graph as training does (`words.tokens_of` for the DNC).
"""

import tensorflow as tf

from keras_attn.models.configured import check_export_backend
from keras_attn.models.memn2n import MemN2NPreprocessor, with_attention
from keras_attn.models.memn2n.export import serving_archive, story_question_archive
from keras_attn.models.memn2n.text_graph import normalize_words, same_batch


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


def dnc_archive(model, vocab, settings, forms=None):
    """The DNC bAbI model's `keras.export.ExportArchive` (`settings`: `RunMeta.settings`,
    `forms`: `babi.surface_forms` of the training data).

    `serving_default(story, question)` as the memory network's; returns `answer`
    (the most probable word, cased as `AnswerCase` says) and its `probability`.
    """
    check_export_backend()
    preprocessor = MemN2NPreprocessor(vocab.tokens, forms or {}, memory_size=1)
    table, _ = preprocessor.graph_resources()
    max_story_words = int(settings["max_story_words"])

    def serve(story, question):
        story, question = same_batch(story, question)
        ids, step = word_sequence(story, question, table, max_story_words)
        return preprocessor.graph_answers(model({"words": ids, "answer_step": step}),
                                          story, question)

    return story_question_archive((model, *preprocessor.graph_resources()), serve,
                                  preprocessor)


def run_preprocessor(vocab, settings, forms=None):
    """The run's `MemN2NPreprocessor`, from its vocabulary, `RunMeta.settings` and
    answer forms (a run saved before the model held its preprocessor too)."""
    return MemN2NPreprocessor(vocab.tokens, forms or {}, memory_size=int(settings["memory_size"]),
                              sentence_length=int(settings["sentence_length"]),
                              question_length=int(settings["question_length"]))


def archive(model, vocab, settings, forms=None):
    """The bAbI QA model's `keras.export.ExportArchive` (`settings`: `RunMeta.settings`)."""
    return serving_archive(with_attention(model), run_preprocessor(vocab, settings, forms))
