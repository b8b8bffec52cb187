"""The memory network from a script: a preprocessor learnt from stories, questions and
answers, `fit` on text, `generate` → answers as the story writes them, `.keras` round
trip, `export` → a SavedModel that TensorFlow alone serves."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_attn.models import MemN2NPreprocessor, MemN2NQA
from keras_attn.models.memn2n import MemN2NSchedule
from keras_attn.training.tasks.memn2n.stories import generate_questions
from tests.conftest import SEED


def texts(count, seed):
    questions = generate_questions(1, count, seed=seed)  # where is PERSON?
    return ([list(q.story) for q in questions], [q.question for q in questions],
            [q.answer for q in questions])


@pytest.fixture(scope="module")
def trained():
    keras.utils.set_random_seed(SEED)  # a module fixture: before the autouse seeding
    stories, questions, answers = texts(600, 0)
    preprocessor = MemN2NPreprocessor.from_texts(stories, questions, answers, memory_size=20)
    model = MemN2NQA(preprocessor=preprocessor)
    model.compile()
    model.fit(x={"story": stories, "question": questions}, y=answers, batch_size=32,
              epochs=30, verbose=0, callbacks=[MemN2NSchedule(verbose=False)])
    return model


def test_the_preprocessor_encodes_as_the_command_line_does():
    from keras_attn.training.tasks.memn2n import babi

    stories, questions, answers = texts(40, 3)
    preprocessor = MemN2NPreprocessor.from_texts(stories, questions, answers, memory_size=6)
    questions_ = generate_questions(1, 40, seed=3)
    arrays, answer_ids, _ = babi.vectorize(questions_, preprocessor.vocabulary, 6,
                                           preprocessor.sentence_length,
                                           preprocessor.question_length)
    encoded = preprocessor.encode(stories, questions)
    np.testing.assert_array_equal(encoded["story"], arrays["story"])
    np.testing.assert_array_equal(encoded["question"], arrays["question"])
    np.testing.assert_array_equal(preprocessor.encode_answers(answers), answer_ids)
    # A story as one string, a sentence a line, is the same story.
    again = preprocessor.encode(["\n".join(s) for s in stories], questions)
    np.testing.assert_array_equal(again["story"], encoded["story"])
    config = json.loads(json.dumps(preprocessor.get_config()))
    assert MemN2NPreprocessor.from_config(config).get_config() == preprocessor.get_config()


def test_sizes_come_from_the_preprocessor_and_conflicts_are_named():
    stories, questions, answers = texts(40, 3)
    preprocessor = MemN2NPreprocessor.from_texts(stories, questions, answers, memory_size=6)
    model = MemN2NQA(preprocessor=preprocessor, answer_space="seen")
    assert model.memory_size == 6 and model.vocab_size == len(preprocessor.vocabulary)
    assert sorted(model.answer_ids) == sorted(preprocessor.answer_ids("seen"))
    with pytest.raises(ValueError, match=r"`memory_size` must match the preprocessor's \(6\) "
                                         r"or be left out; received 50"):
        MemN2NQA(preprocessor=preprocessor, memory_size=50)
    with pytest.raises(ValueError, match=r"needs `vocab_size` and `answer_ids`, or a "
                                         r"`preprocessor`"):
        MemN2NQA()
    assert MemN2NQA(vocab_size=20, answer_ids=[4, 5]).memory_size == 50  # the paper's


def test_fit_on_text_then_generate_answers_as_the_story_writes_them(trained):
    stories, questions, answers = texts(100, 7)
    got = trained.generate(stories, questions)
    assert np.mean([g.lower() == a for g, a in zip(got, answers, strict=True)]) > 0.9
    capitalised = [[s.replace("kitchen", "Kitchen") for s in story] for story in stories]
    # Inside a sentence, the story's form wins; a blank question gets no answer.
    assert trained.generate([["Mary went to the Kitchen."]], ["Where is Mary?"]) == ["Kitchen"]
    assert trained.generate([["Mary went to the kitchen."]], ["   "]) == [""]
    assert len(trained.generate(capitalised[:3], questions[:3])) == 3
    loss, accuracy = trained.evaluate(x={"story": stories, "question": questions}, y=answers,
                                      verbose=0)
    assert accuracy > 0.9


def test_the_keras_file_holds_the_preprocessor(trained, tmp_path):
    path = str(tmp_path / "memn2n.keras")
    trained.save(path)
    reloaded = keras.saving.load_model(path)
    assert type(reloaded) is MemN2NQA
    stories, questions, _ = texts(20, 9)
    assert reloaded.generate(stories, questions) == trained.generate(stories, questions)


def test_text_without_a_preprocessor_is_refused():
    model = MemN2NQA(vocab_size=20, answer_ids=[4, 5], memory_size=3, sentence_length=4,
                     question_length=3)
    model.compile()
    with pytest.raises(ValueError, match=r"To train on text, the model needs a preprocessor: "
                                         r"build it with `MemN2NQA\(preprocessor="):
        model.fit(x={"story": [["Mary left."]], "question": ["Where?"]}, y=["x"], verbose=0)
    with pytest.raises(ValueError, match=r"To export a SavedModel that takes text"):
        model.export("unused")


def test_export_serves_in_a_tensorflow_only_process(trained, tmp_path):
    pytest.importorskip("tensorflow")
    path = str(tmp_path / "export")
    trained.export(path)
    stories, questions, _ = texts(5, 11)
    expected = trained.generate(stories, questions)
    lines = ["\n".join(s) for s in stories]
    script = textwrap.dedent(f"""
        import json, sys
        import tensorflow as tf
        serve = tf.saved_model.load({path!r}).signatures["serving_default"]
        stories = {lines!r}
        out = serve(story=tf.constant(stories), question=tf.constant({questions!r}))
        blank = serve(story=tf.constant(["", " "]), question=tf.constant(["", "  "]))
        assert "keras_attn" not in sys.modules
        print(json.dumps([[a.decode() for a in out["answer"].numpy()],
                          [a.decode() for a in blank["answer"].numpy()],
                          blank["probability"].numpy().tolist()]))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    answers, blank, probabilities = json.loads(result.stdout.strip().splitlines()[-1])
    assert answers == expected
    assert blank == ["", ""] and probabilities == [0.0, 0.0]
    predicted = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "keras-attn"), "predict", path,
         "--story", *stories[0], "--question", questions[0]],
        capture_output=True, text=True, timeout=300)
    assert predicted.returncode == 0, predicted.stderr[-2000:]
    assert expected[0] in predicted.stdout
