"""The translators' small-corpus levers: word dropout on the source, label smoothing in
the loss; each as an option that trains, reloads from `.keras` and exports."""

import keras
import numpy as np
import pytest

from keras_attn.models import TransformerTranslator, Translator, TranslatorPreprocessor
from keras_attn.models.text import UNK_ID
from keras_attn.models.translator import SequenceCrossEntropy, WordDropout, sequence_loss
from tests.models.test_translator_text import number_pairs


def test_word_dropout_replaces_only_real_tokens_and_only_in_training():
    ids = np.arange(4, 4 + 2 * 400).reshape(2, 400).astype("int32")
    ids[:, 350:] = 0  # padding
    ids[:, 0] = 2  # [START]
    layer = WordDropout(0.3, seed=0)
    np.testing.assert_array_equal(np.asarray(layer(ids)), ids)
    out = np.asarray(layer(ids, training=True))
    real = ids >= 4
    assert (out[~real] == ids[~real]).all()
    changed = out[real] != ids[real]
    assert (out[real][changed] == UNK_ID).all()
    assert 0.25 < changed.mean() < 0.35  # 698 draws at p = 0.3
    assert out.dtype == ids.dtype


@pytest.mark.parametrize("rate", [1.0, -0.1, "0.1", float("nan")])
def test_word_dropout_refuses_a_rate_outside_zero_to_one(rate):
    with pytest.raises(ValueError, match="`rate` must be a number in \\[0, 1\\)"):
        WordDropout(rate)


def test_label_smoothing_is_cross_entropy_against_the_smoothed_targets():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 4, 7)).astype("float32")
    targets = rng.integers(0, 7, (2, 4))
    weights = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], "float32")
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    for epsilon in (0.0, 0.1, 0.3):
        smoothed = np.full(logits.shape, epsilon / 7) + (1 - epsilon) * np.eye(7)[targets]
        expected = (-(smoothed * log_p).sum(-1) * weights).sum() / weights.sum()
        got = SequenceCrossEntropy(epsilon)(targets, logits, sample_weight=weights)
        np.testing.assert_allclose(float(got), expected, rtol=1e-5)
    plain = sequence_loss()(targets, logits, sample_weight=weights)
    np.testing.assert_allclose(float(plain), float(SequenceCrossEntropy()(
        targets, logits, sample_weight=weights)), rtol=1e-6)


def test_label_smoothing_refuses_bad_values_and_a_conflicting_loss():
    with pytest.raises(ValueError, match="`label_smoothing` must be a number in \\[0, 1\\)"):
        SequenceCrossEntropy(1.5)
    sources, targets = number_pairs()
    model = Translator(preprocessor=TranslatorPreprocessor.from_texts(sources, targets))
    with pytest.raises(ValueError, match="with your own `loss`, give it there"):
        model.compile(loss="mse", label_smoothing=0.1)


@pytest.mark.parametrize("cls", [Translator, TransformerTranslator])
def test_a_regularised_translator_trains_reloads_and_decodes_the_same(cls, tmp_path):
    sources, targets = number_pairs()
    model = cls(preprocessor=TranslatorPreprocessor.from_texts(sources, targets),
                dropout=0.1, word_dropout=0.2)
    model.compile(label_smoothing=0.1)
    history = model.fit(x=sources, y=targets, batch_size=10, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.get_layer("word_dropout").rate == 0.2
    path = str(tmp_path / "model.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)  # safe mode
    assert reloaded.get_config()["word_dropout"] == 0.2
    assert isinstance(reloaded.loss, SequenceCrossEntropy)
    assert reloaded.loss.label_smoothing == 0.1
    # Inference ignores word dropout: the same output as the trained model, twice.
    assert reloaded.generate(sources[:6]) == model.generate(sources[:6]) == \
        model.generate(sources[:6])
