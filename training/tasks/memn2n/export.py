"""The bAbI tasks' SavedModels (TensorFlow backend): the models' own
(`keras_attn.models.memn2n.export`), built from the run's files with the
preprocessor the run's vocabulary and settings make.

`serving_default(story, question)`: each example's sentences separated by
newlines, oldest first, and its question, both `tf.string [batch]`, normalised
and tokenised in the graph as training does.
"""

from keras_attn.models.memn2n import DNCQAPreprocessor, MemN2NPreprocessor, with_attention
from keras_attn.models.memn2n.export import serving_archive


def dnc_archive(model, vocab, settings, forms=None):
    """The DNC bAbI model's `keras.export.ExportArchive` (`settings`: `RunMeta.settings`,
    `forms`: `babi.surface_forms` of the training data): the model's own, as
    `DNCQA.export` writes it; returns `answer` (the most probable word, cased as the
    story writes it) and its `probability`."""
    return serving_archive(model, DNCQAPreprocessor(
        vocab.tokens, forms or {}, max_story_words=int(settings["max_story_words"])))


def run_preprocessor(vocab, settings, forms=None):
    """The run's `MemN2NPreprocessor`, from its vocabulary, `RunMeta.settings` and
    answer forms (a run saved before the model held its preprocessor too)."""
    return MemN2NPreprocessor(vocab.tokens, forms or {}, memory_size=int(settings["memory_size"]),
                              sentence_length=int(settings["sentence_length"]),
                              question_length=int(settings["question_length"]))


def archive(model, vocab, settings, forms=None):
    """The bAbI QA model's `keras.export.ExportArchive` (`settings`: `RunMeta.settings`)."""
    return serving_archive(with_attention(model), run_preprocessor(vocab, settings, forms))
