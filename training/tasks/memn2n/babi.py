"""The bAbI question-answering format (Weston et al. 2015), read and vectorised.

A file `qaN_<name>_{train,test}.txt` holds stories, one line each, `ID text`, the
ID restarting at 1 for every story. A statement is `ID sentence`; a question is
`ID question<TAB>answer<TAB>supporting ids` (the answers of tasks 8 and 19 are
comma-separated lists, kept here as one answer token, e.g. `milk,football`).
The memory of a question is every statement of its story before it.

Tokens are lowercase runs of `[a-z0-9]`; everything else separates them (the
exported graph applies the same rule with TF string ops).
"""

import dataclasses
import json
import os
import re

import numpy as np

from keras_attn.models.memn2n import preprocessor
from keras_attn.models.memn2n.preprocessor import (
    MemN2NPreprocessor,
    memory_sentences,
    normalize,
    vocabulary_of,
)
from keras_attn.training.data import read_utf8_lines

FILE_NAME = re.compile(r"^qa(\d+)_([A-Za-z0-9-]+)_(train|valid|test)\.txt$")


@dataclasses.dataclass(frozen=True)
class Question:
    """One question with its story.

    Attributes:
        story: the statements before the question, oldest first.
        question: the question text.
        answer: the answer (a list answer as one comma-joined token).
        supporting: indices into `story` of the supporting statements.
        task: the bAbI task number (or a built-in kind's number).
        story_id: the story's index in its file (questions of a story share it).
    """

    story: tuple
    question: str
    answer: str
    supporting: tuple
    task: int = 0
    story_id: int = 0


def surface_forms(questions):
    """`memn2n.preprocessor.surface_forms` over the stories, questions and answers of
    `questions`."""
    return preprocessor.surface_forms(
        [text for q in questions for text in (*q.story, q.question)],
        [part for q in questions for part in q.answer.split(",")])


def save_forms(forms, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(forms, f, ensure_ascii=False, indent=0)


def load_forms(path):
    """`save_forms`' file, or `{}` for a run saved before answers kept their case."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def parse_babi(lines, task=0, source="<lines>"):
    """Parses bAbI-format lines into `Question`s.

    Raises:
        ValueError: naming `source` and the line number, for a line that is not
            `ID text`, a question without an answer, an ID that neither restarts
            at 1 nor follows the previous one, or a supporting ID that is not an
            earlier statement of the story.
    """
    questions, story, line_to_index, last_id, story_id = [], [], {}, 0, -1
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip():
            continue
        head, _, rest = line.partition(" ")
        if not head.isdigit() or not rest:
            raise ValueError(f"{source}:{number}: expected `ID text`; received {line!r}")
        line_id = int(head)
        if line_id == 1:
            story, line_to_index, story_id = [], {}, story_id + 1
        elif line_id != last_id + 1:
            raise ValueError(
                f"{source}:{number}: line ID {line_id} follows {last_id} (IDs restart at 1 "
                "for each story and otherwise increase by one)"
            )
        last_id = line_id
        if "\t" not in rest:
            line_to_index[line_id] = len(story)
            story.append(rest.strip())
            continue
        fields = rest.split("\t")
        if len(fields) < 2 or not fields[1].strip():
            raise ValueError(f"{source}:{number}: a question needs `question<TAB>answer`")
        supporting = []
        for token in (fields[2].split() if len(fields) > 2 else []):
            if not token.isdigit() or int(token) not in line_to_index:
                raise ValueError(
                    f"{source}:{number}: supporting ID {token!r} is not an earlier statement"
                )
            supporting.append(line_to_index[int(token)])
        questions.append(Question(
            tuple(story), fields[0].strip(), fields[1].strip(), tuple(supporting), task, story_id
        ))
    return questions


def load_babi_file(path, task=None):
    match = FILE_NAME.match(os.path.basename(path))
    if task is None:
        task = int(match.group(1)) if match else 0
    return parse_babi(read_utf8_lines(path), task=task, source=path)


def find_task_files(data_dir, split="train"):
    """`{task: {"name": …, "train": path or None, "test": path or None}}` in `data_dir`.

    Raises:
        ValueError: if `data_dir` holds no `qaN_<name>_<split>.txt` file.
    """
    if not os.path.isdir(data_dir):
        raise ValueError(f"{data_dir!r} is not a directory")
    found = {}
    for name in sorted(os.listdir(data_dir)):
        match = FILE_NAME.match(name)
        if match:
            task, title, kind = int(match.group(1)), match.group(2), match.group(3)
            entry = found.setdefault(task, {"name": title, "train": None, "test": None})
            if kind in ("train", "test"):
                entry[kind] = os.path.join(data_dir, name)
    found = {t: e for t, e in found.items() if e[split]}
    if not found:
        raise ValueError(f"{data_dir!r} holds no bAbI `qaN_<name>_{split}.txt` file")
    return dict(sorted(found.items()))


def split_by_story(questions, fraction, seed):
    """(rest, held out): about `fraction` of the stories held out, whole.

    Questions of one story share statements, so they go to the same side.
    """
    stories = sorted({(q.task, q.story_id) for q in questions})
    order = np.random.default_rng(seed).permutation(len(stories))
    held = {stories[i] for i in order[: round(fraction * len(stories))]}
    rest = [q for q in questions if (q.task, q.story_id) not in held]
    out = [q for q in questions if (q.task, q.story_id) in held]
    return rest, out


def build_vocabulary(questions):
    """The memory network's vocabulary of `questions` (`preprocessor.vocabulary_of`)."""
    return vocabulary_of([q.story for q in questions], [q.question for q in questions],
                         [q.answer for q in questions])


def vectorize(questions, vocab, memory_size, sentence_length, question_length):
    """Arrays for `models.memn2n`: the ids `MemN2NPreprocessor.encode` gives (one
    tokenisation for training, `generate` and the export), the answer ids, and where
    each supporting statement sits in the memory.

    The memory holds the `memory_size` most recent statements, most recent first
    (slot 0); sentences and questions longer than their lengths are truncated.

    Returns:
        `{"story": (n, memory_size, sentence_length), "question": (n,
        question_length)}` int32, the answer ids `(n,)` and the memory slot of
        each supporting statement `(n, max supports)` (−1: none, or forgotten).
    """
    tokenizer = MemN2NPreprocessor(vocab.tokens, memory_size=memory_size,
                                   sentence_length=sentence_length,
                                   question_length=question_length)
    x = tokenizer.encode([list(q.story) for q in questions], [q.question for q in questions])
    answers = tokenizer.encode_answers([q.answer for q in questions])
    most_supports = max((len(q.supporting) for q in questions), default=0)
    support_slots = np.full((len(questions), max(most_supports, 1)), -1, "int32")
    for row, q in enumerate(questions):
        # The slots of the sentences the memory keeps (a sentence without a token is
        # dropped, as `encode` and the exported graph drop it).
        slot_of = {i: slot for slot, (i, _) in enumerate(memory_sentences(q.story,
                                                                          memory_size))}
        for column, index in enumerate(q.supporting):
            support_slots[row, column] = slot_of.get(index, -1)
    return x, answers, support_slots


def write_babi(questions, path):
    """Writes `questions` in the bAbI format, each as its own story."""
    with open(path, "w", encoding="utf-8") as f:
        for q in questions:
            for line_id, sentence in enumerate(q.story, start=1):
                f.write(f"{line_id} {sentence}\n")
            support = " ".join(str(i + 1) for i in q.supporting)
            f.write(f"{len(q.story) + 1} {q.question}\t{q.answer}\t{support}\n")


def lengths_of(questions):
    """(longest statement, longest question) in tokens."""
    sentence = max((len(normalize(s).split()) for q in questions for s in q.story), default=1)
    question = max((len(normalize(q.question).split()) for q in questions), default=1)
    return max(sentence, 1), max(question, 1)
