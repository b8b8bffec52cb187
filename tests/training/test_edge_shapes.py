"""Data at the edges of what a task accepts: each trains, exports and serves, or stops
with one line naming the problem (TensorFlow backend: the export is part of it)."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from keras_attn.training.errors import UsageError
from tests.training.serving import TENSORFLOW_BACKEND_ONLY

pytestmark = TENSORFLOW_BACKEND_ONLY

TINY = ["--embedding-dim", "4", "--encoder-units", "4", "--decoder-units", "4",
        "--attention-units", "4", "--epochs", "1", "--no-tensorboard", "--quiet"]


def _train(tmp_path, lines, *flags):
    from keras_attn.training import cli

    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"{s}\t{t}\n" for s, t in lines), encoding="utf-8")
    out = tmp_path / "saved"
    cli.main(["train", "translator", "--data", str(data), *TINY, *flags,
              "--work-dir", str(tmp_path / "run"), "--output-dir", str(out), "--name", "edge"])
    return str(out / "edge" / "1")


def _serve(export, texts):
    import tensorflow as tf

    serve = tf.saved_model.load(export).signatures["serving_default"]
    return serve(text=tf.constant(texts))


WORDS = st.sampled_from(["a", "b", "cd", "é", "x"])


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(sources=["a", "b", "x"], target_words=1, level="word")  # every source one token
@example(sources=["a b", "cd", "é x"], target_words=2, level="subword")
@given(
    sources=st.lists(st.lists(WORDS, min_size=1, max_size=3).map(" ".join), min_size=3,
                     max_size=6, unique=True),
    target_words=st.integers(1, 3),
    level=st.sampled_from(["char", "word", "subword"]),
)
def test_translator_exports_and_serves_at_the_edges(tmp_path_factory, sources, target_words,
                                                    level):
    # Sources of one token or more, targets of one to three words, a vocabulary of a
    # few symbols, repeated to the ten pairs a corpus needs: the export serves any text.
    tmp_path = tmp_path_factory.mktemp("edge")
    lines = [(s, " ".join(["y"] * target_words)) for s in sources] * 4
    export = _train(tmp_path, lines, "--level", level)
    texts = [sources[0], "", "   ", "zzz qqq", sources[-1] + " " + sources[0]]
    out = _serve(export, texts)
    translations = [t.decode() for t in out["translation"].numpy()]
    assert translations[1] == translations[2] == ""  # whitespace is empty input
    assert out["score"].numpy()[1] == out["score"].numpy()[2] == 0.0
    assert np.all(np.isfinite(out["score"].numpy()))
    assert out["alignment"].shape[0] == len(texts)
    # A batch of only empty or blank strings, the first request many clients send.
    blank = _serve(export, ["", "   ", "\t\n"])
    assert [t.decode() for t in blank["translation"].numpy()] == ["", "", ""]
    assert blank["score"].numpy().tolist() == [0.0, 0.0, 0.0]


def test_sources_of_one_token_and_the_longest_at_max_tokens(tmp_path):
    lines = [("uno dos tres cuatro", "one two"), ("uno", "one"), ("dos", "two"),
             ("tres", "three")] * 3
    export = _train(tmp_path, lines, "--level", "word", "--max-tokens", "4")
    out = _serve(export, ["uno", "uno dos tres cuatro cinco seis"])
    assert out["alignment"].shape[-1] == 4  # the trained maximum, at most
    assert os.path.exists(os.path.join(export, "saved_model.pb"))


@pytest.mark.parametrize("lines, message", [
    ([("hola", "hello")], "only 1 usable pairs (at least 10 needed)"),
    ([("a", "b")] * 12, "1 distinct source sentence(s); at least 3 are needed"),
    ([("a b", "x y"), ("b c", "y z"), ("c a", "z x")] * 4,
     "--max-tokens 1: no training pair is that short"),
])
def test_a_corpus_that_cannot_train_stops_with_one_line(tmp_path, lines, message):
    with pytest.raises(UsageError) as stop:
        _train(tmp_path, lines, "--level", "word", "--max-tokens", "1")
    assert message in str(stop.value)
