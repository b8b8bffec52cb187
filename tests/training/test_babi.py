"""The bAbI loader (on small files written here) and the built-in story generator."""

import re

import numpy as np
import pytest

from keras_attn.models.memn2n.preprocessor import cased_answer, normalize, normalize_answer
from keras_attn.training.tasks.memn2n import babi
from keras_attn.training.tasks.memn2n.stories import KINDS, generate_questions, kind_number

LISTS = """\
1 Mary moved to the bathroom.
2 Mary got the football there.
3 What is Mary carrying?\tfootball\t2
4 Mary took the milk there.
5 What is Mary carrying?\tfootball,milk\t2 4
1 The kitchen is north of the hallway.
2 The garden is west of the kitchen.
3 How do you go from the hallway to the garden?\tn,w\t1 2
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_parses_stories_list_answers_and_supporting_ids(tmp_path):
    path = _write(tmp_path, "qa8_lists-sets_train.txt", LISTS)
    questions = babi.load_babi_file(path)
    assert [q.task for q in questions] == [8, 8, 8]
    first, second, third = questions
    assert first.story == ("Mary moved to the bathroom.", "Mary got the football there.")
    # The question line (ID 3) is not a statement: ID 4 is the story's third one.
    assert second.story[-1] == "Mary took the milk there." and len(second.story) == 3
    assert second.answer == "football,milk" and second.supporting == (1, 2)
    assert third.story_id == 1 and third.answer == "n,w" and third.supporting == (0, 1)
    assert normalize_answer(second.answer) == "football,milk"
    assert normalize(first.question) == "what is mary carrying"


@pytest.mark.parametrize("text, message", [
    ("1 Mary moved.\n3 Where is Mary?\tx\t1\n", r"qa1_x_train.txt:2: line ID 3 follows 1"),
    ("1 Mary moved.\nhello world\n", r":2: expected `ID text`"),
    ("1 Mary moved.\n2 Where is Mary?\t\t1\n", r":2: a question needs"),
    ("1 Mary moved.\n2 Where is Mary?\tkitchen\t5\n", r":2: supporting ID '5'"),
])
def test_malformed_lines_name_the_file_and_line(tmp_path, text, message):
    path = _write(tmp_path, "qa1_x_train.txt", text)
    with pytest.raises(ValueError, match=message):
        babi.load_babi_file(path)


def test_a_line_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "qa1_x_train.txt"
    path.write_bytes("1 Mary moved.\n2 Mary went to the caf\u00e9.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"qa1_x_train.txt:2: not UTF-8 \(byte 0xe9 at column 23\)"):
        babi.load_babi_file(str(path))


def test_finds_task_files_with_or_without_test_files(tmp_path):
    _write(tmp_path, "qa1_single-supporting-fact_train.txt", LISTS)
    _write(tmp_path, "qa2_two-supporting-facts_train.txt", LISTS)
    _write(tmp_path, "qa2_two-supporting-facts_test.txt", LISTS)
    _write(tmp_path, "notes.txt", "not bAbI")
    found = babi.find_task_files(str(tmp_path))
    assert sorted(found) == [1, 2]
    assert found[1]["test"] is None and found[2]["test"].endswith("qa2_two-supporting-facts_test.txt")
    assert sorted(babi.find_task_files(str(tmp_path), split="test")) == [2]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no bAbI"):
        babi.find_task_files(str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="is not a directory"):
        babi.find_task_files(str(tmp_path / "missing"))


def test_split_by_story_keeps_stories_whole():
    questions = generate_questions(1, 500, seed=0)
    rest, held = babi.split_by_story(questions, 0.2, seed=0)
    assert len(rest) + len(held) == 500 and held
    assert not {q.story_id for q in rest} & {q.story_id for q in held}
    assert 0.1 < len(held) / 500 < 0.3


def test_vectorize_keeps_the_most_recent_sentences_first():
    story = tuple(f"Mary went to place{i}." for i in range(8)) + ("!!!",)
    q = babi.Question(story, "Where is Mary?", "place7", (7, 0), 1)
    vocab = babi.build_vocabulary([q])
    x, answers, slots = babi.vectorize([q], vocab, memory_size=5, sentence_length=3,
                                       question_length=4)
    assert x["story"].shape == (1, 5, 3) and x["question"].shape == (1, 4)
    # The token-less "!!!" is dropped; slot 0 is place7, slot 4 is place3.
    assert vocab.tokens[x["story"][0, 0, 2]] == "to"  # truncated to 3 words
    first = [vocab.tokens[i] for i in x["story"][0, 0] if i]
    assert first == ["mary", "went", "to"]
    assert slots.tolist() == [[0, -1]]  # sentence 0 fell out of the memory
    assert vocab.tokens[answers[0]] == "place7"


def test_write_babi_round_trips(tmp_path):
    questions = generate_questions(2, 30, seed=4)
    path = str(tmp_path / "qa2_two-supporting-facts_test.txt")
    babi.write_babi(questions, path)
    back = babi.load_babi_file(path)
    assert [(q.story, q.question, q.answer, q.supporting) for q in back] == [
        (q.story, q.question, q.answer, q.supporting) for q in questions
    ]


# -- the generator, checked by an independent reading of its stories -----------------
def _replay(story):
    """Who is where and who holds what, read back from the sentences alone."""
    place, holding, floor = {}, {}, {}
    for sentence in story:
        words = re.findall(r"[A-Za-z]+", sentence)
        person = words[0]
        if sentence.endswith("there."):
            item = words[-2]
            holding.setdefault(person, set()).add(item)
            floor.pop(item, None)
        elif words[1] in ("dropped", "discarded", "put", "left"):
            item = words[-1]
            holding[person].discard(item)
            floor[item] = place[person]
        else:
            place[person] = words[-1]
    return place, holding, floor


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_generated_answers_follow_from_the_story(kind):
    questions = generate_questions(kind, 300, seed=7)
    assert len(questions) == 300 and all(q.task == kind for q in questions)
    for q in questions:
        place, holding, floor = _replay(q.story)
        words = re.findall(r"[A-Za-z]+", q.question)
        if kind == 1:
            assert q.answer == place[words[-1]]
        elif kind == 2:
            item = words[-1]
            holder = [p for p, items in holding.items() if item in items]
            assert q.answer == (place[holder[0]] if holder else floor[item])
        elif kind == 6:
            assert q.answer == ("yes" if place[words[1]] == words[-1] else "no")
        else:
            count = len(holding.get(words[-2], ()))
            assert q.answer == ("none", "one", "two", "three")[count]
        assert all(0 <= i < len(q.story) for i in q.supporting)
        if kind in (1, 6):
            assert words[1 if kind == 6 else -1] in q.story[q.supporting[0]]


def test_generator_is_deterministic_and_balanced():
    a, b = generate_questions("yes-no", 400, seed=1), generate_questions(6, 400, seed=1)
    assert a == b
    assert a != generate_questions(6, 400, seed=2)
    share = np.mean([q.answer == "yes" for q in a])
    assert 0.4 < share < 0.6
    places = {q.answer for q in generate_questions(1, 400, seed=1)}
    assert len(places) == 6
    assert kind_number("counting") == 7
    with pytest.raises(ValueError, match="Unknown story kind"):
        kind_number("three-supporting-facts")


def test_answers_keep_the_case_their_story_writes():
    questions = babi.parse_babi([
        "1 Fred gave the football to Jeff.", "2 Who gave the football to Jeff?\tFred\t1",
        "1 jeff went home.", "2 Jeff took the milk.", "3 What did Jeff take?\tmilk\t2",
    ])
    forms = babi.surface_forms(questions)
    assert forms["jeff"] == "Jeff" and forms["fred"] == "Fred" and forms["milk"] == "milk"
    story = ("Fred gave the football to Jeff.", "Mary saw JEFF.")
    assert cased_answer("jeff", story, forms) == "JEFF"  # the most recent use
    assert cased_answer("fred", (), forms) == "Fred"  # not in the story: the data's
    assert cased_answer("milk,football", story, forms) == "milk,football"
    assert cased_answer("zorp", story, forms) == "zorp"  # nowhere: as it is


def test_a_sentence_initial_capital_is_not_the_words_form():
    """Task 15 writes "Sheep are afraid of mice." and answers `sheep`: a sentence's
    first word is capitalised whatever it is. Names still come back capitalised, from
    their uses inside sentences, in questions and in answers."""
    questions = babi.parse_babi([
        "1 Sheep are afraid of mice.", "2 Gertrude is a sheep.",
        "3 What is Gertrude afraid of?\tmouse\t1 2",
        "1 Mary went to the kitchen.", "2 Where is Mary?\tkitchen\t1",
        "1 Mary went to the garden.", "2 Who is in the garden?\tMary\t1",
        "1 Bill grabbed the apple there.", "2 Bill gave the apple to Fred.",
        "3 Who received the apple?\tFred\t2",
    ])
    forms = babi.surface_forms(questions)
    assert forms["sheep"] == "sheep" and forms["mary"] == "Mary" and forms["fred"] == "Fred"
    assert forms["bill"] == "Bill"  # only ever sentence-initial: that form, then
    # Every kind of answer: a word only the first of a sentence writes, a name, a
    # place, a list, a yes/no, a number.
    deduction = ("Wolves are afraid of sheep.", "Sheep are afraid of cats.")
    assert cased_answer("sheep", deduction, forms) == "sheep"
    assert cased_answer("cat", ("Sheep are afraid of cats.",), forms) == "cat"
    assert cased_answer("mary", ("Mary went to the garden.",), forms) == "Mary"
    assert cased_answer("fred", ("Fred took the milk.", "Fred left."), forms) == "Fred"
    assert cased_answer("kitchen", ("Kitchen is east of the hall.",), forms) == "kitchen"
    assert cased_answer("apple,milk", ("Apple pie.", "Mary took the milk."),
                             forms) == "apple,milk"
    assert cased_answer("yes", ("Yes.",), forms) == "yes"
    assert cased_answer("two", ("Two apples are here.",), forms) == "two"


def test_surface_forms_round_trip_and_old_runs_have_none(tmp_path):
    path = str(tmp_path / "forms.json")
    babi.save_forms({"jeff": "Jeff", "é": "É"}, path)
    assert babi.load_forms(path) == {"jeff": "Jeff", "é": "É"}
    assert babi.load_forms(str(tmp_path / "missing.json")) == {}
