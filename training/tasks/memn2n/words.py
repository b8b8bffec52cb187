"""bAbI questions as word sequences, for the DNC (Graves et al. 2016, Methods).

One question is one sequence: the story's statements, oldest first, each
followed by `.`, then the question followed by `?`; the answer is read at the
`?`. Words are `memn2n.preprocessor.normalize`'s tokens. A story longer than
`max_story_words` keeps its most recent words (the oldest sentence kept may
lose its start), as the export does.
"""

import math

import keras
import numpy as np

from keras_attn.models.batching import varied_first
from keras_attn.models.memn2n.preprocessor import (
    WORD_SEQUENCE_MARKS,
    normalize_answer,
    vocabulary_of,
    word_tokens,
)


def tokens_of(question, max_story_words):
    """The word sequence of one `babi.Question`; the last token is the `?`
    (`models.memn2n.preprocessor.word_tokens`, the preprocessor's own rule)."""
    return word_tokens(question.story, question.question, max_story_words)


def build_vocabulary(questions):
    """Every word of the stories, questions and answers, and `.` and `?`
    (`preprocessor.vocabulary_of`, as `DNCQAPreprocessor.from_texts` learns it)."""
    return vocabulary_of([q.story for q in questions], [q.question for q in questions],
                         [q.answer for q in questions], WORD_SEQUENCE_MARKS)


def encode(questions, vocab, max_story_words):
    """(one int32 id array per question, answer ids `(n,)`); unknown words are `[UNK]`."""
    sequences = [np.asarray(vocab.encode(" ".join(tokens_of(q, max_story_words))), "int32")
                 for q in questions]
    answers = np.array([vocab.index.get(normalize_answer(q.answer), 1) for q in questions],
                       "int32")
    return sequences, answers


def pad(sequences, bucket):
    """`{"words": (n, T), "answer_step": (n,)}` right-padded with 0 to a multiple
    of `bucket` steps (one compiled step function per bucket, not per length)."""
    steps = bucket * math.ceil(max(len(s) for s in sequences) / bucket)
    words = np.zeros((len(sequences), steps), "int32")
    for row, sequence in enumerate(sequences):
        words[row, :len(sequence)] = sequence
    return {"words": words, "answer_step": np.array([len(s) - 1 for s in sequences], "int32")}


def batches_by_length(lengths, batch_size, rng=None, drop_remainder=False):
    """Index batches of similar lengths: sorted by length (shuffled first, and the
    batches shuffled, when `rng` is given), so little of a batch is padding."""
    order = np.arange(len(lengths)) if rng is None else rng.permutation(len(lengths))
    order = order[np.argsort(np.asarray(lengths)[order], kind="stable")]
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if drop_remainder and batches and len(batches[-1]) < batch_size and len(batches) > 1:
        batches = batches[:-1]
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


class QuestionBatches(keras.utils.PyDataset):
    """`(inputs, answers)` batches for `model.fit`, of similar lengths.

    Training batches (`shuffle=True`) are drawn again every epoch from `seed`
    and are all full (the few questions of a last partial batch wait for the
    next epoch's draw), so every device of a data-parallel run gets an equal
    share.
    """

    def __init__(self, sequences, answers, batch_size, bucket=32, shuffle=False, seed=0,
                 **kwargs):
        super().__init__(**kwargs)
        if len(sequences) != len(answers):
            raise ValueError(f"`sequences` and `answers` must have the same length; received "
                             f"{len(sequences)} and {len(answers)}.")
        if not sequences:
            raise ValueError("`sequences` must hold at least one question; received none.")
        self.sequences, self.answers = sequences, np.asarray(answers, "int32")
        self.batch_size, self.bucket, self.shuffle = int(batch_size), int(bucket), shuffle
        self.rng = np.random.default_rng(seed)
        self.lengths = [len(s) for s in sequences]
        self.on_epoch_end()

    def on_epoch_end(self):
        self.batches = batches_by_length(self.lengths, self.batch_size,
                                         self.rng if self.shuffle else None,
                                         drop_remainder=self.shuffle)
        # TensorFlow's dataset signature comes from the first two batches.
        self.batches = varied_first(self.batches, [(self.steps(rows),) for rows in self.batches])

    def steps(self, rows):
        """The padded length of the batch of `rows`."""
        return self.bucket * math.ceil(max(self.lengths[i] for i in rows) / self.bucket)

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        rows = self.batches[index]
        return pad([self.sequences[i] for i in rows], self.bucket), self.answers[rows]

