"""The memory network's training CLI, export and serving checks (TensorFlow backend)."""

import dataclasses
import json
import os

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from keras_attn.models.memn2n.preprocessor import cased_answer
from keras_attn.models.text import Vocabulary
from keras_attn.training.errors import UsageError
from keras_attn.training.tasks.memn2n import babi
from keras_attn.training.tasks.memn2n.stories import generate_questions
from tests.training.serving import (
    TENSORFLOW_BACKEND_ONLY,
    assert_story_question_checks,
    saved_model_cli_run,
    session_run,
    tf_only,
)

pytestmark = TENSORFLOW_BACKEND_ONLY


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A memory network briefly trained on built-in single-supporting-fact stories."""
    from keras_attn.training import cli

    root = tmp_path_factory.mktemp("memn2n")
    work, out = str(root / "work"), str(root / "saved_models")
    cli.main(["train", "memn2n", "--kinds", "1", "--train-questions", "500",
              "--test-questions", "100", "--epochs", "25", "--memory-size", "12", "--no-linear-start",
              "--work-dir", work, "--output-dir", out, "--no-tensorboard", "--quiet"])
    return {"work": work, "export": os.path.join(out, "memn2n", "1"), "root": out}


def _serve(export, stories, questions):
    import tensorflow as tf

    serve = tf.saved_model.load(export).signatures["serving_default"]
    return serve(story=tf.constant(stories), question=tf.constant(questions))


def test_export_layout(trained):
    extra = os.path.join(trained["export"], "assets.extra")
    assert os.path.exists(os.path.join(trained["export"], "saved_model.pb"))
    for name in ("model.keras", "vocab.json", "forms.json", "meta.json", "test"):
        assert os.path.exists(os.path.join(extra, name)), name
    assert json.load(open(os.path.join(extra, "meta.json")))["task"] == "memn2n"


def test_tensorflow_only_process_matches_keras_on_100_questions(trained, tmp_path):
    from keras_attn.training.runner import load_run
    from keras_attn.training.tasks.memn2n.task import answer

    meta, model, assets, _ = load_run(trained["work"])
    vocab = assets["vocab"]
    questions = generate_questions(1, 100, seed=42)
    answers, probabilities, attention = answer(model, vocab, meta.settings, questions)
    # Places written with a capital: the answer comes back as the story writes it.
    questions = [dataclasses.replace(q, story=tuple(s.replace(q.answer, q.answer.title())
                                                    for s in q.story)) for q in questions]
    stories = ["\n".join(q.story) for q in questions]
    out = tf_only(f"""
        import json
        import tensorflow as tf
        serve = tf.saved_model.load({trained['export']!r}).signatures["serving_default"]
        out = serve(story=tf.constant(json.loads({json.dumps(json.dumps(stories))})),
                    question=tf.constant(json.loads({json.dumps(json.dumps([q.question for q in questions]))})))
        print(json.dumps({{"answer": [a.decode() for a in out["answer"].numpy()],
                          "probability": out["probability"].numpy().tolist(),
                          "attention": out["hop_attention"].numpy().tolist()}}))
    """, tmp_path)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["answer"] == [cased_answer(a, q.story, assets["forms"])
                             for a, q in zip(answers, questions, strict=True)]
    assert sum(a.istitle() for a in got["answer"]) > 80, got["answer"]
    np.testing.assert_allclose(got["probability"], probabilities, atol=1e-5)
    np.testing.assert_allclose(got["attention"], attention, atol=1e-5)
    assert np.mean([a == q.answer.lower() for a, q in zip(answers, questions, strict=True)]) > 0.8


def test_session_loader_as_tf_serving_does(trained, tmp_path):
    feeds = {"story": np.array(["Mary went to the kitchen.\nJohn went to the garden."]),
             "question": np.array(["Where is Mary?"])}
    out = session_run(trained["export"], feeds, tmp_path)
    assert sorted(out) == ["answer", "hop_attention", "probability"]
    assert np.shape(out["hop_attention"]) == (1, 3, 12)


def test_saved_model_cli_run(trained):
    out = saved_model_cli_run(trained["export"],
                              'story=["Mary went to the kitchen."];question=["Where is Mary?"]')
    assert "answer" in out and "hop_attention" in out


def test_bad_inputs_have_defined_results_at_the_signature(trained):
    import tensorflow as tf

    places = ["office", "garden", "kitchen", "hallway", "bedroom", "bathroom"] * 4
    sentences = [f"{'Mary' if i % 3 else 'John'} went to the {p}." for i, p in enumerate(places)]
    long_story, recent = "\n".join(sentences), "\n".join(sentences[-12:])
    out = _serve(trained["export"],
                 ["", "Mary went to the kitchen.", long_story, "\n\n  \n", recent],
                 ["Where is Mary?", "Zorp blick quux?", "Where is Mary?", "", "Where is Mary?"])
    for key in ("probability", "hop_attention"):
        assert np.all(np.isfinite(out[key].numpy())), key
    attention = out["hop_attention"].numpy()
    # Nothing to read: every slot is empty, so (as in the authors' code, empty
    # slots in the softmax with score 0) the weights are uniform and the read is 0.
    np.testing.assert_allclose(attention[0], 1 / 12, atol=1e-6)
    np.testing.assert_allclose(attention[3], 1 / 12, atol=1e-6)
    assert out["answer"].numpy()[1] != b""  # unknown words: an answer from the memory alone
    # Nothing asked: an empty answer of probability 0, alone in a batch too.
    assert out["answer"].numpy()[3] == b"" and out["probability"].numpy()[3] == 0.0
    blank = _serve(trained["export"], ["", "  \n "], ["", "   "])
    assert blank["answer"].numpy().tolist() == [b"", b""]
    assert blank["probability"].numpy().tolist() == [0.0, 0.0]
    # A story longer than the memory is served as its 12 most recent sentences.
    np.testing.assert_allclose(attention[2], attention[4], atol=1e-6)
    assert out["answer"].numpy()[2] == out["answer"].numpy()[4]
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be a 1-D string tensor"):
        _serve(trained["export"], [["a", "b"]], ["x"])
    assert_story_question_checks(lambda story, question: _serve(trained["export"], story,
                                                                question))


@settings(max_examples=40, deadline=None)
@example(sentences=["Mary\x00Went home."], question="\x000")  # text after a NUL counts
@given(
    sentences=st.lists(st.text(max_size=30), max_size=16),
    question=st.text(max_size=30),
)
def test_in_graph_preprocessing_equals_training(trained, sentences, question):
    import tensorflow as tf

    from keras_attn.models import preprocessor_graph as export_lib
    from keras_attn.models.memn2n import preprocessor_graph as memn2n_export

    vocab = Vocabulary.load(os.path.join(trained["work"], "vocab.json"))
    meta = json.load(open(os.path.join(trained["work"], "meta.json")))["settings"]
    # Newlines separate sentences: a sentence cannot hold one.
    sentences = [s.replace("\n", " ").replace("\r", " ") for s in sentences]
    q = babi.Question(tuple(sentences), question, "x", ())
    x, _, _ = babi.vectorize([q], vocab, meta["memory_size"], meta["sentence_length"],
                             meta["question_length"])
    table = export_lib.lookup_table(vocab.tokens)
    story_ids = memn2n_export.story_memory(tf.constant(["\n".join(sentences)]), table,
                                        meta["memory_size"], meta["sentence_length"])
    np.testing.assert_array_equal(story_ids.numpy(), x["story"])
    ids = memn2n_export.question_ids(tf.constant([question]), table, meta["question_length"])
    np.testing.assert_array_equal(ids.numpy(), x["question"])


def test_predict_command_with_plot(trained, tmp_path, capsys):
    from keras_attn.training import cli

    plot = str(tmp_path / "hops.png")
    cli.main(["predict", os.path.dirname(trained["export"]),
              "--story", "Mary went to the kitchen.", "John went to the garden.",
              "--question", "Where is John?", "--plot", plot])
    printed = capsys.readouterr().out
    assert "Where is John? → " in printed and "hop 1" in printed
    assert os.path.getsize(plot) > 1000
    # The weights of each hop over the kept sentences: in [0, 1], summing to 1.
    rows = [line.split()[:3] for line in printed.splitlines() if line.endswith(" garden.")
            or line.endswith(" kitchen.")]
    weights = np.array(rows, float)  # (sentences, hops)
    assert weights.shape == (2, 3) and np.all((weights >= 0) & (weights <= 1))
    np.testing.assert_allclose(weights.sum(0), 1.0, atol=2e-3)
    with pytest.raises(UsageError, match="needs --question"):
        cli.main(["predict", trained["export"], "--story", "Mary went to the kitchen."])
    story_file = tmp_path / "story.txt"
    story_file.write_text("\n".join(f"Mary went to the {p}." for p in ["garden"] * 13 + ["office"]))
    cli.main(["predict", trained["export"], "--story-file", str(story_file),
              "--question", "Where is Mary?"])
    assert "keeps the 12 most recent" in capsys.readouterr().out


def test_evaluate_on_the_run_and_on_the_export(trained, capsys):
    from keras_attn.training import cli

    cli.main(["evaluate", "memn2n", "--run-dir", trained["work"]])
    on_run = capsys.readouterr().out
    cli.main(["evaluate", "memn2n", "--run-dir", os.path.join(trained["export"], "assets.extra")])
    on_export = capsys.readouterr().out
    assert "single-supporting-fact" in on_run and "mean error" in on_run
    assert on_run.splitlines()[1:] == on_export.splitlines()[1:]


@settings(max_examples=60, deadline=None)
@example(answer="jeff,milk", sentences=["Jeff took the Milk.", "jeff left"])
@given(
    answer=st.lists(st.sampled_from(["jeff", "milk", "fred", "zorp", "a1"]), min_size=1,
                    max_size=3).map(",".join),
    sentences=st.lists(st.text(alphabet=st.sampled_from(list("JjEeFfMmIiLlKk aA1.\n")),
                               max_size=20), max_size=4),
)
def test_in_graph_answer_case_equals_training(answer, sentences):
    import tensorflow as tf

    from keras_attn.models.memn2n.preprocessor_graph import cased_answers, forms_table

    forms = {"jeff": "Jeff", "fred": "FRED", "a1": "A1"}
    sentences = [s.replace("\n", " ") for s in sentences]
    got = cased_answers(tf.constant([answer]), tf.constant(["\n".join(sentences)]),
                        forms_table(forms))
    assert got.numpy()[0].decode() == cased_answer(answer, sentences, forms)
