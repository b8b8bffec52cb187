"""Export and serving checks for the translator (TensorFlow backend only)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from keras_attn.training.errors import UsageError
from tests.training.serving import (
    TENSORFLOW_BACKEND_ONLY,
    saved_model_cli_run,
    session_run,
    tf_only,
)

pytestmark = TENSORFLOW_BACKEND_ONLY


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A briefly trained date translator, exported with beam width 4."""
    from keras_attn.training import cli

    root = tmp_path_factory.mktemp("export")
    work, out = str(root / "work"), str(root / "saved_models")
    cli.main(["train", "translator", "--train-size", "3000", "--test-size", "200", "--epochs", "2",
              "--work-dir", work, "--output-dir", out, "--no-tensorboard"])
    return {"work": work, "export": os.path.join(out, "translator", "1"), "root": out}


def test_export_layout_and_atomic_versions(trained, tmp_path):
    from keras_attn.training.export import next_version, write_atomically, write_serving_config

    assert os.path.exists(os.path.join(trained["export"], "saved_model.pb"))
    assert os.path.exists(os.path.join(trained["export"], "assets.extra", "model.keras"))
    base = os.path.dirname(trained["export"])
    assert not [n for n in os.listdir(base) if n.startswith(".tmp")]
    assert next_version(base) == 2
    with pytest.raises(RuntimeError, match="boom"):
        write_atomically(str(tmp_path / "m"), lambda d: (_ for _ in ()).throw(RuntimeError("boom")))
    assert os.listdir(tmp_path / "m") == []  # a failed export leaves nothing behind
    path, count = write_serving_config(trained["root"])
    text = open(path).read()
    assert count == 1 and 'name: "translator"' in text and 'model_platform: "tensorflow"' in text
    assert f'base_path: "{os.path.abspath(base)}"' in text


def test_tensorflow_only_process_matches_keras_on_200_inputs(trained, tmp_path):
    from keras_attn.training.runner import load_run
    from keras_attn.training.tasks.translator.dates import generate_pairs
    from keras_attn.training.tasks.translator.decoding import translate_texts

    meta, model, assets, _ = load_run(trained["work"])
    src, tgt, settings = assets["source_vocab"], assets["target_vocab"], meta.settings
    texts = [s for s, _ in generate_pairs(200, seed=99)]
    expected = translate_texts(model, src, tgt, settings, texts,
                               beam_width=settings["beam_width"])
    out = tf_only(f"""
        import json
        import tensorflow as tf
        texts = json.loads({json.dumps(json.dumps(texts))})
        serve = tf.saved_model.load({trained['export']!r}).signatures["serving_default"]
        out = serve(text=tf.constant(texts))
        print(json.dumps({{
            "translation": [t.decode() for t in out["translation"].numpy()],
            "finite": bool(tf.reduce_all(tf.math.is_finite(out["alignment"]))),
            "alignment_shape": out["alignment"].shape.as_list(),
        }}))
    """, tmp_path)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["translation"] == expected
    assert got["finite"] and got["alignment_shape"][0] == 200
    assert got["alignment_shape"][2] == settings["max_source_length"]
    assert np.mean([g == t for g, (_, t) in zip(got["translation"], generate_pairs(200, seed=99), strict=True)]) > 0.5


def test_session_loader_as_tf_serving_does(trained, tmp_path):
    out = session_run(trained["export"], {"text": np.array(["3 March 1998", ""])}, tmp_path)
    assert sorted(out) == ["alignment", "score", "translation"]
    assert out["translation"][1] == ""  # empty text, empty translation


def test_saved_model_cli_run(trained):
    out = saved_model_cli_run(trained["export"], 'text=["3 March 1998"]')
    assert "translation" in out and "alignment" in out


def test_bad_inputs_at_the_signature(trained):
    import tensorflow as tf

    from keras_attn.training.runner import load_run

    meta, _, assets, _ = load_run(trained["work"])
    src, meta = assets["source_vocab"], meta.settings
    serve = tf.saved_model.load(trained["export"]).signatures["serving_default"]
    too_long = "3 March 1998" + "x" * 200
    texts = ["", "3 March 1998", too_long, "3 March 1998"[: meta["max_source_length"]],
             "\u2603\u2603 1998", "[UNK][UNK] 1998", "7.7.1977"]
    out = serve(text=tf.constant(texts))
    translation = [t.decode() for t in out["translation"].numpy()]
    assert translation[0] == "" and float(out["score"][0]) == 0.0
    # Truncated to the trained maximum, as documented.
    truncated = too_long[: meta["max_source_length"]]
    assert translation[2] == [t.decode() for t in serve(text=tf.constant([truncated]))["translation"].numpy()][0]
    assert np.all(np.isfinite(out["score"].numpy())) and np.all(np.isfinite(out["alignment"].numpy()))
    # Unseen characters become [UNK]: the ids equal Python's.
    from keras_attn.models.preprocessor_graph import lookup_table, tokenize

    ids = tokenize(tf.constant(["\u2603\u2603 1998"]), lookup_table(src.tokens), meta["preprocess"],
                   meta["max_source_length"]).numpy()[0]
    assert ids[:2].tolist() == [1, 1]
    errors = (TypeError, ValueError, tf.errors.InvalidArgumentError)
    with pytest.raises(errors, match=r"expected to be a string tensor but is a int32"):
        serve(text=tf.constant([1, 2]))
    # Every shape but [batch]: a scalar, [1, 1] (once served as its one string), rank 3.
    for wrong_rank in ("a", [["a"]], [["a", "b"]], [["a"], ["b"], ["c"]], [[["a"]]],
                       [[["a"]], [["b"]]]):
        with pytest.raises(errors, match=r"`text` must be a 1-D string tensor of shape \[batch\]"):
            serve(text=tf.constant(wrong_rank))


@settings(max_examples=50, deadline=None)
@example(texts=["3 MARCH\x00 1998", "A\x00B. c"], level="word",
         options={"lowercase": True, "space_punctuation": True})
@example(texts=["ab abc ##b x" + "y" * 120, "", "zzz"], level="subword",
         options={"lowercase": False, "space_punctuation": True})
@example(texts=["¿Dónde está la biblioteca?", "Él dijo: «Hola», y se fue.", "  Tom's 10 "],
         level="subword", options={"lowercase": False, "space_punctuation": True})  # --data's
@given(texts=st.lists(st.text(max_size=40), min_size=1, max_size=6),
       level=st.sampled_from(["char", "word", "subword"]),
       options=st.fixed_dictionaries({"lowercase": st.booleans(), "space_punctuation": st.booleans()}))
def test_in_graph_tokenization_equals_training(texts, level, options):
    import tensorflow as tf

    from keras_attn.models.preprocessor_graph import lookup_table, tokenize
    from keras_attn.models.text import Vocabulary, encode_batch, normalize_spacing

    preprocess = {"level": level, "collapse_whitespace": level != "char", **options}
    if level == "char":
        preprocess.update(lowercase=False, space_punctuation=False)

    def python_side(text):
        if preprocess["lowercase"]:
            text = text.lower()
        if preprocess["collapse_whitespace"]:
            text = normalize_spacing(text, preprocess["space_punctuation"])
        return text

    if preprocess["lowercase"]:
        # Python's and TF's (ICU's) lower-casing differ on a few code points
        # (e.g. 'İ' → 'i̇' vs 'i'); `--lowercase` is documented for ASCII case.
        texts = [t for t in texts if t.isascii()] or [""]
    vocab = Vocabulary.build([python_side(t) for t in texts[: len(texts) // 2 + 1]] + ["a b ."],
                             level, max_size=40 if level == "subword" else None)
    expected = encode_batch(vocab, [python_side(t) for t in texts], 12)
    got = tokenize(tf.constant(texts), lookup_table(vocab.tokens), preprocess, 12,
                   vocab.longest_piece).numpy()
    np.testing.assert_array_equal(got, expected)


@settings(max_examples=50, deadline=None)
@example(text="AB\x00C\x00")
@given(text=st.text(max_size=20))
def test_in_graph_lowercase_matches_python_and_keeps_text_after_a_nul(text):
    import tensorflow as tf

    from keras_attn.models.preprocessor_graph import lowercase

    if not text.isascii():  # ICU and Python differ on a few code points (see above)
        text = text.encode("ascii", "ignore").decode()
    assert lowercase(tf.constant([text, "X"])).numpy().tolist() == [text.lower().encode(), b"x"]


def test_translate_command_with_plot(trained, tmp_path):
    plot = tmp_path / "alignment.png"
    result = subprocess.run(
        [sys.executable, "-m", "keras_attn.training.cli", "translate", os.path.dirname(trained["export"]),
         "3 March 1998", "", "--plot", str(plot)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3",
             "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(__file__)))},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("3 March 1998\t") and lines[1].startswith("\t\t")
    assert plot.exists() and plot.stat().st_size > 1000


def test_predict_command_dispatches_on_the_exported_task(trained, capsys):
    from keras_attn.training import cli

    cli.main(["predict", trained["export"], "3 March 1998"])
    assert capsys.readouterr().out.startswith("3 March 1998\t")
    with pytest.raises(UsageError, match="needs the texts"):
        cli.main(["predict", trained["export"]])


def test_evaluate_command_on_the_run_and_on_the_export(trained, capsys):
    from keras_attn.training import cli

    cli.main(["evaluate", "translator", "--run-dir", trained["work"], "--beam-width", "2"])
    out = capsys.readouterr().out
    assert "200 pairs from 200 lines" in out and "greedy" in out and "beam2" in out
    cli.main(["evaluate", "translator", "--run-dir",
              os.path.join(trained["export"], "assets.extra"), "--beam-width", "1"])
    assert "exact match" in capsys.readouterr().out


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.lists(st.integers(0, 11), max_size=10), min_size=1, max_size=4),
       level=st.sampled_from(["char", "word", "subword"]), space_punctuation=st.booleans())
def test_in_graph_detokenization_equals_training(rows, level, space_punctuation):
    import tensorflow as tf

    from keras_attn.models.preprocessor_graph import detokenize as graph_detokenize
    from keras_attn.models.text import Vocabulary, detokenize

    tokens = ["[PAD]", "[UNK]", "[START]", "[END]", "a", "b", "##c", "##d", "?", ".", "¿", "xy"]
    vocab = Vocabulary(tokens, level)
    preprocess = {"level": level, "space_punctuation": space_punctuation}
    width = max(map(len, rows)) or 1
    ids = np.array([row + [0] * (width - len(row)) for row in rows], "int32")
    expected = [detokenize(vocab.decode(row), preprocess) for row in ids]
    got = graph_detokenize(tf.constant(ids), tokens, preprocess).numpy()
    assert [g.decode() for g in got] == expected


def test_the_next_export_removes_what_a_killed_one_left(tmp_path):
    from keras_attn.training.export import write_atomically

    root = tmp_path / "model"
    killed = root / ".tmp-export-999999999-abc"  # no such process
    running = root / f".tmp-export-{os.getpid()}-def"  # an export under way
    for folder in (killed, running):
        folder.mkdir(parents=True)
        (folder / "saved_model.pb").write_bytes(b"x")
    version = write_atomically(str(root), lambda d: open(os.path.join(d, "f"), "w").close())
    assert sorted(os.listdir(root)) == sorted(["1", running.name])
    assert version == str(root / "1")
