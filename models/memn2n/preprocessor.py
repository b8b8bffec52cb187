"""`MemN2NPreprocessor`: stories, questions and answers ↔ the memory network's ids.

The one implementation of the bAbI text rules: tokens are the lowercase `[a-z0-9]`
runs of a sentence (everything else separates them); the memory holds the most
recent sentences that have a token, most recent first; an answer is written back in
the case its story (or, failing that, the training data) writes it. Training data,
`generate`, the command line and the exported graph (the graph methods below, with
`models.memn2n.preprocessor_graph`: the same rules in TensorFlow string ops, held equal by
property tests) use it. TensorFlow is imported only there, where text becomes ids
in a graph.
"""

import re
from collections import Counter

import keras
import numpy as np

from keras_attn import _validation
from keras_attn.models.text import UNK_ID, Vocabulary, encode_batch

WORD = re.compile(r"[a-z0-9]+")
WRITTEN_WORD = re.compile(r"[A-Za-z0-9]+")  # a token as written, before lower-casing


def normalize(text):
    """`"Mary moved to the bathroom."` → `"mary moved to the bathroom"`."""
    return " ".join(WORD.findall(text.lower()))


def normalize_answer(answer):
    """An answer as one token: a list answer's parts joined by `,` (`milk,football`)."""
    return ",".join(normalize(part).replace(" ", "_") for part in answer.split(","))


def memory_sentences(story, memory_size):
    """The sentences a memory holds: those with a token, most recent first, at most
    `memory_size`; as `(index in story, normalised text)` pairs."""
    kept = [(i, normalize(sentence)) for i, sentence in enumerate(story)]
    return [(i, text) for i, text in kept if text][::-1][:memory_size]


def surface_forms(sentences, answers=()):
    """`{token: the form it is most often written in}` over `sentences` and `answers`
    (`"jeff"` → `"Jeff"`), for answers to be given back as the data writes them. A
    sentence's first word is capitalised whatever it is ("Sheep are afraid of
    mice."), so it counts only for a token the data never writes elsewhere; answers
    count as written. Ties go to the form first seen."""
    inside, initial = {}, {}
    for text in sentences:
        for position, word in enumerate(WRITTEN_WORD.findall(text)):
            counts = initial if position == 0 else inside
            counts.setdefault(word.lower(), Counter())[word] += 1
    for answer in answers:
        for word in WRITTEN_WORD.findall(answer):
            inside.setdefault(word.lower(), Counter())[word] += 1
    return {token: (inside.get(token) or initial[token]).most_common(1)[0][0]
            for token in sorted({*inside, *initial})}


def cased_answer(answer, story, forms):
    """An answer token in the case the story writes it inside a sentence (its most
    recent use; a sentence's first word is capitalised whatever it is), else in
    `forms`' (`surface_forms`), else as it is; each part of a list answer
    (`"milk,football"`) on its own."""
    written = [w for sentence in reversed(story)
               for w in reversed(WRITTEN_WORD.findall(sentence)[1:])]
    parts = []
    for part in answer.split(","):
        in_story = next((w for w in written if w.lower() == part), None)
        parts.append(in_story or forms.get(part, part))
    return ",".join(parts)


def vocabulary_of(stories, questions, answers, extra_texts=()):
    """The word `Vocabulary` of stories (sentence lists), questions and answers, and
    `extra_texts` (the DNC's `.` and `?`): every token, the specials first."""
    texts = [*extra_texts, *(normalize(s) for story in stories for s in story)]
    texts += [normalize(q) for q in questions] + [normalize_answer(a) for a in answers]
    return Vocabulary.build(texts, level="word")


def _sentences(story):
    """A story as its sentences: a list of them, or one string, a sentence a line."""
    if isinstance(story, str):
        return story.split("\n")
    if isinstance(story, (list, tuple)) and all(isinstance(s, str) for s in story):
        return list(story)
    raise ValueError("each story must be a string (a sentence a line) or a list of sentence "
                     f"strings; received {type(story).__name__}.")


def _strings(name, texts):
    if isinstance(texts, str) or not isinstance(texts, (list, tuple, np.ndarray)):
        raise ValueError(f"`{name}` must be a list of strings; received "
                         f"{type(texts).__name__}.")
    return list(texts)


class StoryPreprocessor(keras.layers.Layer):
    """What the bAbI-style preprocessors share: the word vocabulary, the answers' written
    forms and the answers seen in training; answers to ids and back; the served
    graph's answers. A subclass turns stories and questions into its model's ids
    (`encode`, and `graph_inputs` in a graph) and says its sizes (`sizes`)."""

    def __init__(self, vocabulary, forms=None, answers=(), **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        if isinstance(vocabulary, str) or not all(isinstance(t, str) for t in vocabulary):
            raise ValueError("`vocabulary` must be a list of token strings; received "
                             f"{type(vocabulary).__name__}.")
        object.__setattr__(self, "vocabulary", Vocabulary(vocabulary, "word"))
        object.__setattr__(self, "forms", dict(forms or {}))
        object.__setattr__(self, "answers", tuple(answers))
        object.__setattr__(self, "_graph", {})

    @staticmethod
    def learn(stories, questions, answers, extra_texts=()):
        """`(stories as sentence lists, questions, vocabulary tokens, forms, seen
        answers)` from training texts, checked (`from_texts`' first half)."""
        stories = [_sentences(s) for s in _strings("stories", stories)]
        questions, answers = _strings("questions", questions), _strings("answers", answers)
        if not len(stories) == len(questions) == len(answers) or not stories:
            raise ValueError("`stories`, `questions` and `answers` must be non-empty and of "
                             f"the same length; received {len(stories)}, {len(questions)} and "
                             f"{len(answers)}.")
        vocabulary = vocabulary_of(stories, questions, answers, extra_texts)
        forms = surface_forms([s for story in stories for s in story] + questions, answers)
        seen = sorted({normalize_answer(a) for a in answers})
        return stories, questions, vocabulary.tokens, forms, seen

    @staticmethod
    def stories_and_questions(stories, questions):
        stories = [_sentences(s) for s in _strings("stories", stories)]
        questions = _strings("questions", questions)
        if len(stories) != len(questions):
            raise ValueError("`stories` and `questions` must have the same length; received "
                             f"{len(stories)} and {len(questions)}.")
        return stories, questions

    def encode_answers(self, answers):
        """Answer ids `(n,)` (an unseen answer is `[UNK]`)."""
        return np.array([self.vocabulary.index.get(normalize_answer(a), UNK_ID)
                         for a in _strings("answers", answers)], "int32")

    def answer_ids(self, answer_space="vocabulary"):
        """The ids an answer may be: every word (`"vocabulary"`, the authors' code) or
        the answers seen in training (`"seen"`)."""
        if answer_space == "seen" and self.answers:
            return [self.vocabulary.index[a] for a in self.answers if a in self.vocabulary.index]
        if answer_space not in ("vocabulary", "seen"):
            raise ValueError("`answer_space` must be 'vocabulary' or 'seen'; received "
                             f"{answer_space!r}.")
        return list(range(4, len(self.vocabulary)))

    def decode(self, ids, stories, questions=None):
        """Answer ids → the answers as their stories write them; an empty or blank
        question's answer is empty."""
        ids = np.asarray(keras.ops.convert_to_numpy(ids)).tolist()
        stories = [_sentences(s) for s in stories]
        out = []
        for row, (i, story) in enumerate(zip(ids, stories, strict=True)):
            if questions is not None and not questions[row].strip():
                out.append("")
            else:
                out.append(cased_answer(self.vocabulary.tokens[int(i)], story, self.forms))
        return out

    def sizes(self):
        """The sizes a model reads from this preprocessor, by argument name (and what
        `meta.json` records of it)."""
        return {}

    # The graph side (TensorFlow, imported only here): the same rules with
    # `models.memn2n.preprocessor_graph`, for the exported SavedModels.

    def serving_signature(self):
        """The `tf.TensorSpec`s of `serving_default(story, question)`."""
        from keras_attn.models.preprocessor_graph import text_signature

        return text_signature("story", "question")

    def graph_resources(self):
        """The graph's word table and answer-forms table, made once (an export tracks
        them)."""
        if not self._graph:
            from keras_attn.models.memn2n.preprocessor_graph import forms_table
            from keras_attn.models.preprocessor_graph import lookup_table

            self._graph["table"] = lookup_table(self.vocabulary.tokens)
            self._graph["forms"] = forms_table(self.forms)
        return self._graph["table"], self._graph["forms"]

    def graph_answers(self, logits, story, question):
        """Answer logits `[B, V]` → `{"answer", "probability"}` in the graph, as
        `decode` writes them (an empty or blank question: `""`, probability 0)."""
        import tensorflow as tf

        from keras_attn.models.memn2n.preprocessor_graph import answer_of

        _, forms = self.graph_resources()
        answers = tf.constant(self.vocabulary.tokens)
        return answer_of(logits, answers, forms, story, question)

    def get_config(self):
        config = super().get_config()
        config.pop("dtype", None)  # ids and strings: no float policy
        return {**config, "vocabulary": list(self.vocabulary.tokens), "forms": self.forms,
                "answers": list(self.answers), **self.sizes()}


@keras.saving.register_keras_serializable(package="keras_attn_models")
class MemN2NPreprocessor(StoryPreprocessor):
    """Turns bAbI-style stories and questions into `MemN2NQA`'s ids, and answers back.

    A story is its sentences, oldest first (a list of strings, or one string with a
    sentence a line). Tokens are the lowercase `[a-z0-9]` runs; an unseen word is
    `[UNK]`. The memory keeps the `memory_size` most recent sentences that hold a
    token, most recent first, each cut to `sentence_length` words; a question is
    cut to `question_length` words. An answer is one token (a list answer's parts
    joined by `,`), written back as its story writes it inside a sentence, else in
    the training data's most frequent form (`forms`).

    Learn one from your data with `from_texts`; give it to `MemN2NQA(preprocessor=…)`.

    Args:
        vocabulary: the word tokens, in id order (the four specials first).
        forms: `{token: written form}`, from `surface_forms`.
        memory_size, sentence_length, question_length: the model's input sizes.
        answers: the answer tokens seen in training (the candidates of
            `answer_space="seen"`).

    Example:

    >>> from keras_attn.models import MemN2NPreprocessor
    >>> preprocessor = MemN2NPreprocessor.from_texts(
    ...     [["Mary went to the kitchen.", "John went to the garden."]],
    ...     ["Where is Mary?"], ["kitchen"], memory_size=4)
    >>> preprocessor.encode([["Mary went to the kitchen."]], ["Where is Mary?"])["story"].shape
    (1, 4, 5)
    """

    def __init__(self, vocabulary, forms=None, memory_size=50, sentence_length=12,
                 question_length=12, answers=(), **kwargs):
        super().__init__(vocabulary, forms, answers, **kwargs)
        for name, value in (("memory_size", memory_size), ("sentence_length", sentence_length),
                            ("question_length", question_length)):
            setattr(self, name, _validation.check_integer(name, value))

    @classmethod
    def from_texts(cls, stories, questions, answers, memory_size=50, **kwargs):
        """Learns the vocabulary, the answers' written forms and the lengths.

        Args:
            stories: one story per question (a list of sentences, or a string with
                a sentence a line).
            questions, answers: strings, one per story.
            memory_size: the most sentences the memory holds.
        """
        stories, questions, tokens, forms, seen = cls.learn(stories, questions, answers)
        sentence_length = max([1] + [len(normalize(s).split()) for st in stories for s in st])
        question_length = max([1] + [len(normalize(q).split()) for q in questions])
        return cls(tokens, forms, memory_size=memory_size, sentence_length=sentence_length,
                   question_length=question_length, answers=seen, **kwargs)

    def sizes(self):
        return {"memory_size": self.memory_size, "sentence_length": self.sentence_length,
                "question_length": self.question_length}

    def encode(self, stories, questions):
        """`{"story": (n, memory_size, sentence_length), "question": (n,
        question_length)}` int32 ids."""
        stories, questions = self.stories_and_questions(stories, questions)
        story = np.zeros((len(stories), self.memory_size, self.sentence_length), "int32")
        for row, sentences in enumerate(stories):
            kept = [text for _, text in memory_sentences(sentences, self.memory_size)]
            if kept:
                story[row, : len(kept)] = encode_batch(self.vocabulary, kept,
                                                       self.sentence_length)
        question = encode_batch(self.vocabulary, [normalize(q) for q in questions],
                                self.question_length)
        return {"story": story, "question": question}

    def graph_inputs(self, story, question):
        """`tf.string [B]` stories and questions → `(story, question, ids)`: both
        checked as one batch of 1-D strings, and the model's input ids (as `encode`)."""
        from keras_attn.models.memn2n import preprocessor_graph as graph

        table, _ = self.graph_resources()
        story, question = graph.same_batch(story, question)
        ids = {"story": graph.story_memory(story, table, self.memory_size,
                                                self.sentence_length),
               "question": graph.question_ids(question, table, self.question_length)}
        return story, question, ids


SENTENCE_END, QUESTION_MARK = ".", "?"
WORD_SEQUENCE_MARKS = [f"{SENTENCE_END} {QUESTION_MARK}"]  # in the DNC's vocabulary


def word_tokens(story, question, max_story_words):
    """The DNC's word sequence of one question: the story's sentences, oldest first,
    each followed by `.` (a sentence without a word dropped), its most recent
    `max_story_words` kept, then the question and `?` (the answer is read there)."""
    words = []
    for sentence in story:
        tokens = normalize(sentence).split()
        if tokens:
            words += tokens + [SENTENCE_END]
    return words[-max_story_words:] + normalize(question).split() + [QUESTION_MARK]


@keras.saving.register_keras_serializable(package="keras_attn_models")
class DNCQAPreprocessor(StoryPreprocessor):
    """Turns bAbI-style stories and questions into `DNCQA`'s word sequences, and answers
    back (Graves et al. 2016, Methods, "bAbI").

    One question is one sequence of words: the story's sentences, oldest first, each
    followed by `.`, then the question followed by `?` (`word_tokens`); a story
    longer than `max_story_words` keeps its most recent words. Words, unseen words
    and the answers' case are as `MemN2NPreprocessor`'s.

    Args:
        vocabulary: the word tokens, in id order (the four specials first).
        forms: `{token: written form}`, from `surface_forms`.
        max_story_words: the most story words a sequence keeps (400, as
            `keras-attn train dnc-babi`).
        answers: the answer tokens seen in training.

    Example:

    >>> from keras_attn.models import DNCQAPreprocessor
    >>> preprocessor = DNCQAPreprocessor.from_texts(
    ...     [["Mary went to the kitchen."]], ["Where is Mary?"], ["kitchen"])
    >>> preprocessor.encode([["Mary went to the kitchen."]], ["Where is Mary?"])["words"].shape
    (1, 10)
    """

    def __init__(self, vocabulary, forms=None, max_story_words=400, answers=(), **kwargs):
        super().__init__(vocabulary, forms, answers, **kwargs)
        self.max_story_words = _validation.check_integer("max_story_words", max_story_words)

    @classmethod
    def from_texts(cls, stories, questions, answers, max_story_words=400, **kwargs):
        """Learns the vocabulary (`.` and `?` included) and the answers' forms."""
        _, _, tokens, forms, seen = cls.learn(stories, questions, answers,
                                              extra_texts=WORD_SEQUENCE_MARKS)
        return cls(tokens, forms, max_story_words=max_story_words, answers=seen, **kwargs)

    def sizes(self):
        return {"max_story_words": self.max_story_words}

    def encode(self, stories, questions):
        """`{"words": (n, T), "answer_step": (n,)}` int32: the word sequences
        right-padded with 0, and the step of each `?`."""
        stories, questions = self.stories_and_questions(stories, questions)
        sequences = [self.vocabulary.encode(" ".join(word_tokens(story, question,
                                                                 self.max_story_words)))
                     for story, question in zip(stories, questions, strict=True)]
        words = np.zeros((len(sequences), max(map(len, sequences), default=1)), "int32")
        for row, sequence in enumerate(sequences):
            words[row, :len(sequence)] = sequence
        return {"words": words,
                "answer_step": np.array([len(s) - 1 for s in sequences], "int32")}

    def graph_inputs(self, story, question):
        """`tf.string [B]` stories and questions → `(story, question, ids)` in the
        graph, as `encode`."""
        from keras_attn.models.memn2n import preprocessor_graph as graph

        table, _ = self.graph_resources()
        story, question = graph.same_batch(story, question)
        words, step = graph.word_sequence(story, question, table, self.max_story_words)
        return story, question, {"words": words, "answer_step": step}
