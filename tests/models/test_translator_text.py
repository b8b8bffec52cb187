"""The translators from a script: a preprocessor learnt from texts, `fit` on text,
`generate` → strings, `.keras` round trip, `export` → a SavedModel TensorFlow alone
serves, padding masked by default."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_attn.models import TransformerTranslator, Translator, TranslatorPreprocessor
from keras_attn.models.translator import START_ID, decode_ids
from tests.conftest import SEED
from tests.keras_attn.contract import to_numpy

SPANISH = "cero uno dos tres cuatro cinco seis siete ocho nueve".split()
ENGLISH = "zero one two three four five six seven eight nine".split()


def number_pairs():
    """100 pairs, `"tres y siete"` → `"Three and seven."`."""
    pairs = [(f"{SPANISH[a]} y {SPANISH[b]}", f"{ENGLISH[a].title()} and {ENGLISH[b]}.")
             for a in range(10) for b in range(10)]
    return [s for s, _ in pairs], [t for _, t in pairs]


def learns_reloads_and_serves(model, sources, targets, tmp_path):
    """Fits the compiled `model` on the text pairs (its last epoch's loss under half
    its first's), saves and reloads it in safe mode, and checks that the reload, and on
    TensorFlow the export served by TensorFlow alone, translate as `model` does;
    returns the reloaded model for the caller's own checks."""
    history = model.fit(x=sources, y=targets, batch_size=10, epochs=8, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    path = str(tmp_path / "model.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)  # safe mode
    translations = model.generate(sources[:6])
    assert reloaded.generate(sources[:6]) == translations == model.generate(sources[:6])
    if keras.backend.backend() == "tensorflow":
        export = str(tmp_path / "export")
        model.export(export)
        assert served_translations(export, sources[:6]) == translations
    return reloaded


def served_translations(export, texts):
    """What `serving_default(text=texts)` of the export at `export` translates, in a
    fresh process that loads it with TensorFlow alone (never imports keras_attn)."""
    script = textwrap.dedent(f"""
        import json, sys
        import tensorflow as tf
        serve = tf.saved_model.load({export!r}).signatures["serving_default"]
        out = serve(text=tf.constant({list(texts)!r}))
        assert "keras_attn" not in sys.modules
        print(json.dumps([t.decode() for t in out["translation"].numpy()]))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def trained():
    """A translator trained on the number pairs from text, and its preprocessor."""
    keras.utils.set_random_seed(SEED)  # a module fixture: before the autouse seeding
    sources, targets = number_pairs()
    preprocessor = TranslatorPreprocessor.from_texts(sources, targets)
    model = Translator(preprocessor=preprocessor)
    model.compile()
    model.fit(x=sources, y=targets, batch_size=10, epochs=20, verbose=0)
    return model


def test_the_preprocessor_learns_both_sides_and_decodes_back():
    sources, targets = number_pairs()
    preprocessor = TranslatorPreprocessor.from_texts(sources, targets)
    assert preprocessor.level == "subword" and not preprocessor.lowercase
    # "three and seven ." is 4 target tokens (the full stop spaced out), + [START] [END].
    assert preprocessor.max_source_length == 3 and preprocessor.max_target_length == 6
    ids = preprocessor.encode_targets(["Three and seven."])
    decoded = preprocessor.decode([ids[0] + [3, 0]])
    assert decoded == ["Three and seven."]
    assert preprocessor.source_tokens("tres  y\tsiete") == ["tres", "y", "siete"]


def test_the_preprocessor_config_is_its_vocabularies():
    sources, targets = number_pairs()
    preprocessor = TranslatorPreprocessor.from_texts(sources, targets, level="word",
                                                     lowercase=True)
    config = json.loads(json.dumps(preprocessor.get_config()))
    again = TranslatorPreprocessor.from_config(config)
    assert again.encode_sources(sources) == preprocessor.encode_sources(sources)
    assert again.get_config() == preprocessor.get_config()


@pytest.mark.parametrize("call, message", [
    (lambda: TranslatorPreprocessor.from_texts("hola", ["Hello"]),
     r"`sources` must be a list of strings, not one string; received 'hola'"),
    (lambda: TranslatorPreprocessor.from_texts(["hola", 3], ["a", "b"]),
     r"`sources` must hold strings; received a int \('3'\)"),
    (lambda: TranslatorPreprocessor.from_texts(["hola"], ["a", "b"]),
     r"`sources` and `targets` must have the same length; received 1 and 2"),
    (lambda: TranslatorPreprocessor.from_texts(["hola"], ["a"], level="bpe"),
     r"`level` must be one of \('char', 'word', 'subword'\); received 'bpe'"),
    (lambda: TranslatorPreprocessor.from_texts(["hola"], ["a"], max_vocabulary=2.5),
     r"`max_vocabulary` must be an integer ≥ 5"),
])
def test_bad_texts_and_options_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_graph_tokenises_as_python_does():
    tf = pytest.importorskip("tensorflow")
    sources, targets = number_pairs()
    preprocessor = TranslatorPreprocessor.from_texts(sources, targets)
    texts = ["tres y  siete", "  nueve y cero ", "", "once y tres"]
    graph = preprocessor(tf.constant(texts)).numpy()
    for row, ids in zip(graph, preprocessor.encode_sources(texts), strict=True):
        assert row[: len(ids)].tolist() == ids and not row[len(ids):].any()
    x, target_out, weights = preprocessor.tokenize_pairs(tf.constant(sources[:3]),
                                                         tf.constant(targets[:3]))
    for row, ids in enumerate(preprocessor.encode_targets(targets[:3])):
        assert x["target_in"].numpy()[row, : len(ids) + 1].tolist() == [START_ID, *ids]
        assert target_out.numpy()[row, : len(ids) + 1].tolist() == [*ids, 3]
        assert weights.numpy()[row].sum() == len(ids) + 1


@pytest.mark.parametrize("cls", [Translator, TransformerTranslator])
def test_sizes_come_from_the_preprocessor(cls):
    sources, targets = number_pairs()
    preprocessor = TranslatorPreprocessor.from_texts(sources, targets)
    model = cls(preprocessor=preprocessor)
    assert model.source_vocab_size == preprocessor.source_vocabulary_size
    assert model.get_config()["target_vocab_size"] == preprocessor.target_vocabulary_size
    with pytest.raises(ValueError, match=r"`source_vocab_size` must match the preprocessor's "
                                         r"\(\d+\) or be left out; received 3"):
        cls(source_vocab_size=3, preprocessor=preprocessor)
    with pytest.raises(ValueError, match=r"needs `source_vocab_size`, `target_vocab_size`.* or "
                                         r"a `preprocessor` to read them from"):
        cls()
    with pytest.raises(ValueError, match=r"`preprocessor` must be a TranslatorPreprocessor; "
                                         r"received dict"):
        cls(preprocessor={"level": "word"})


def test_fit_on_text_then_generate_strings(trained):
    out = trained.generate(["tres y siete", "nueve y cero"], beam_width=4)
    assert out == ["Three and seven.", "Nine and zero."]
    assert trained.generate("tres y siete") == "Three and seven."
    assert trained.generate(["", "   "]) == ["", ""]
    loss, accuracy = trained.evaluate(x=number_pairs()[0], y=number_pairs()[1], verbose=0)
    assert accuracy > 0.95 and loss < 0.3


def test_the_keras_file_holds_the_preprocessor(trained, tmp_path):
    path = str(tmp_path / "translator.keras")
    trained.save(path)
    reloaded = keras.saving.load_model(path)  # safe mode
    assert type(reloaded) is Translator
    assert reloaded.preprocessor.get_config() == trained.preprocessor.get_config()
    texts = ["tres y siete", "dos y dos", "cinco y ocho"]
    assert reloaded.generate(texts, beam_width=3) == trained.generate(texts, beam_width=3)
    assert reloaded.optimizer is not None  # compiled as saved, no warning path


def test_a_transformer_trains_on_text_and_reloads(tmp_path):
    sources, targets = number_pairs()
    model = TransformerTranslator(preprocessor=TranslatorPreprocessor.from_texts(sources, targets))
    model.compile()
    history = model.fit(x=sources, y=targets, validation_data=(sources[:20], targets[:20]),
                        batch_size=10, epochs=2, verbose=0)
    assert history.history["loss"][1] < history.history["loss"][0]
    assert "val_token_accuracy" in history.history
    path = str(tmp_path / "transformer.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    assert reloaded.generate(sources[:5]) == model.generate(sources[:5])
    assert all(isinstance(t, str) for t in reloaded.generate(sources[:5]))
    if keras.backend.backend() != "tensorflow":
        return
    export = str(tmp_path / "export")
    model.export(export)
    assert served_translations(export, sources[:5]) == model.generate(sources[:5])


def test_fit_takes_a_dataset_of_strings():
    tf = pytest.importorskip("tensorflow")
    sources, targets = number_pairs()
    model = Translator(preprocessor=TranslatorPreprocessor.from_texts(sources, targets))
    model.compile()
    dataset = tf.data.Dataset.from_tensor_slices((sources, targets)).batch(10)
    history = model.fit(dataset, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()
    with pytest.raises(ValueError, match=r"`y` must be None when `x` is a tf.data.Dataset"):
        model.fit(dataset, y=targets, epochs=1, verbose=0)


def test_text_without_a_preprocessor_is_refused_with_what_to_give():
    model = Translator(20, 20)
    model.compile()
    with pytest.raises(ValueError, match=r"To train or evaluate on text, the model needs a "
                                         r"preprocessor: build it with `Translator\("
                                         r"preprocessor=TranslatorPreprocessor.from_texts"):
        model.fit(x=["hola"], y=["hello"], epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"To translate text, the model needs a preprocessor"):
        model.generate(["hola"], max_length=4)
    with pytest.raises(ValueError, match=r"To export a SavedModel that takes text, the model "
                                         r"needs a preprocessor"):
        model.export("unused")
    with pytest.raises(ValueError, match=r"`max_length` is needed to decode ids"):
        model.generate(np.ones((1, 3), "int32"))


def test_padding_is_masked_without_sample_weight(rng):
    """A half-padded batch: the loss and accuracy `evaluate` gives alone equal the ones
    given with `sample_weight = target != [PAD]`, and differ from counting padding."""
    model = Translator(12, 10)
    model.compile()
    source = rng.integers(4, 12, (8, 6)).astype("int32")
    target_in = rng.integers(4, 10, (8, 8)).astype("int32")
    target_in[:, 0] = START_ID
    target_out = np.concatenate([target_in[:, 1:], np.full((8, 1), 3, "int32")], axis=1)
    target_in[:, 4:], target_out[:, 4:] = 0, 0
    x = {"source": source, "target_in": target_in}
    alone = model.evaluate(x, target_out, verbose=0)
    weighted = model.evaluate(x, target_out, sample_weight=(target_out != 0).astype("float32"),
                              verbose=0)
    np.testing.assert_allclose(alone, weighted, rtol=1e-6)
    logits = to_numpy(model(x))
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = -np.take_along_axis(log_probs, target_out[..., None], -1)[..., 0]
    np.testing.assert_allclose(alone[0], picked[:, :4].mean(), rtol=1e-4)
    assert abs(alone[0] - picked.mean()) > 1e-3  # what counting padding would give


def test_compile_with_no_arguments_is_the_cli_recipe():
    model = Translator(12, 10)
    model.compile()
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    assert model.optimizer.clipnorm == 5.0
    assert np.isclose(float(model.optimizer.learning_rate), 3e-3)
    assert model.loss.reduction == "mean_with_sample_weight"


def test_export_refuses_other_formats(trained):
    with pytest.raises(ValueError, match=r"`format` must be 'tf_saved_model' for a translator"):
        trained.export("unused", format="onnx")


def test_export_serves_text_in_a_tensorflow_only_process(trained, tmp_path):
    pytest.importorskip("tensorflow")
    path = str(tmp_path / "export")
    trained.export(path, beam_width=2)
    meta = json.load(open(os.path.join(path, "assets.extra", "meta.json"), encoding="utf-8"))
    assert meta["task"] == "translator" and meta["settings"]["beam_width"] == 2
    # A fresh process that never imports keras_attn, as TF Serving.
    script = textwrap.dedent(f"""
        import sys, json
        import tensorflow as tf
        serve = tf.saved_model.load({path!r}).signatures["serving_default"]
        out = {{}}
        for name, batch in (("real", ["tres y siete", "nueve y cero"]), ("blank", ["", "   "]),
                            ("mixed", ["", "dos y dos"])):
            result = serve(text=tf.constant(batch))
            out[name] = ([t.decode() for t in result["translation"].numpy()],
                         result["score"].numpy().tolist())
        assert "keras_attn" not in sys.modules
        print(json.dumps(out))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["real"][0] == ["Three and seven.", "Nine and zero."]
    assert out["blank"] == [["", ""], [0.0, 0.0]]
    assert out["mixed"][0] == ["", "Two and two."] and out["mixed"][1][0] == 0.0
    # The command line reads the same export.
    predicted = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "keras-attn"), "predict", path,
         "tres y siete"], capture_output=True, text=True, timeout=300)
    assert predicted.returncode == 0, predicted.stderr[-2000:]
    assert predicted.stdout.splitlines()[-1].startswith("tres y siete\tThree and seven.\t")


def test_decode_ids_is_the_id_level_decoder(trained):
    ids = trained.preprocessor.padded_sources(["tres y siete"])
    out = decode_ids(trained, ids, max_length=5)
    assert trained.preprocessor.decode(out["tokens"]) == ["Three and seven."]


def test_the_first_fit_on_text_starts_the_output_bias_at_the_targets_frequencies():
    """As the command line does (`initialize_output_bias`): without it the RNN stays at
    the unigram on real text. A later fit keeps what training learnt."""
    sources, targets = number_pairs()
    model = Translator(preprocessor=TranslatorPreprocessor.from_texts(sources, targets,
                                                                      level="word"))
    model.compile(optimizer=keras.optimizers.SGD(0.0))  # the bias stays where fit put it
    model.fit(x=sources, y=targets, batch_size=50, epochs=1, verbose=0)
    bias = keras.ops.convert_to_numpy(model.get_layer("decoder").output_projection.bias)
    ids = model.preprocessor.encode_targets(targets)
    counts = np.bincount([i for row in ids for i in row], minlength=len(bias)).astype(float)
    counts[3] += len(ids)  # [END] once a sentence
    np.testing.assert_allclose(bias, np.log((counts + 1) / (counts + 1).sum()), rtol=1e-5)
    model.get_layer("decoder").output_projection.bias.assign(np.zeros_like(bias))
    model.fit(x=sources, y=targets, batch_size=50, epochs=1, verbose=0)
    assert not keras.ops.convert_to_numpy(
        model.get_layer("decoder").output_projection.bias).any()  # trained: left alone
