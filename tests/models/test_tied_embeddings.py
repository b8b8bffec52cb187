"""The shared vocabulary and tied embeddings of the RNN translator: one vocabulary of
both sides, the target embedding as the output layer (Press & Wolf 2017) and, with a
shared vocabulary, as the source embedding too; each trains, reloads and exports."""

import keras
import numpy as np
import pytest

from keras_attn.models import Translator, TranslatorPreprocessor
from keras_attn.models.translator import TiedOutput
from tests.models.test_translator_text import learns_reloads_and_serves, number_pairs

SIZES = dict(embedding_dim=16, encoder_units=16, decoder_units=32, attention_units=16,
             attention_layer_size=32)


def test_tied_output_is_the_embedding_transposed_plus_a_bias():
    rng = np.random.default_rng(0)
    embeddings = rng.normal(size=(7, 4)).astype("float32")
    states = rng.normal(size=(2, 3, 4)).astype("float32")
    layer = TiedOutput(7)
    layer.build(states.shape)
    layer.bias.assign(np.arange(7, dtype="float32"))
    got = keras.ops.convert_to_numpy(layer(states, embeddings))
    np.testing.assert_allclose(got, states @ embeddings.T + np.arange(7), rtol=1e-5, atol=1e-5)
    assert TiedOutput.from_config(layer.get_config()).vocab_size == 7
    with pytest.raises(ValueError, match=r"`embeddings` must have 7 rows, one per token; "
                                         r"received shape \(6, 4\)"):
        layer(states, embeddings[:6])
    with pytest.raises(ValueError, match="`vocab_size` must be"):
        TiedOutput(0)


def test_a_shared_vocabulary_holds_both_sides_words():
    sources, targets = number_pairs()
    shared = TranslatorPreprocessor.from_texts(sources, targets, level="word",
                                               shared_vocabulary=True)
    apart = TranslatorPreprocessor.from_texts(sources, targets, level="word")
    assert shared.shared_vocabulary and not apart.shared_vocabulary
    assert shared.source.tokens == shared.target.tokens
    assert set(shared.source.tokens) == set(apart.source.tokens) | set(apart.target.tokens)
    # A word has one id on either side, and the config rebuilds it shared.
    ids = shared.source.encode("tres y Three")
    assert ids == shared.target.encode("tres y Three") and 1 not in ids  # no [UNK]
    rebuilt = TranslatorPreprocessor.from_config(shared.get_config())
    assert rebuilt.shared_vocabulary
    # At subword level it may hold twice a side's pieces (60 each here, when apart).
    apart = TranslatorPreprocessor.from_texts(sources, targets, max_vocabulary=60)
    assert apart.source_vocabulary_size == apart.target_vocabulary_size == 60
    pieces = TranslatorPreprocessor.from_texts(sources, targets, max_vocabulary=60,
                                               shared_vocabulary=True)
    assert 60 < pieces.source_vocabulary_size <= 2 * 60 + 4


def test_tying_removes_the_output_kernel_and_three_way_tying_the_source_embedding():
    sources, targets = number_pairs()
    apart = TranslatorPreprocessor.from_texts(sources, targets, level="word")
    shared = TranslatorPreprocessor.from_texts(sources, targets, level="word",
                                               shared_vocabulary=True)
    untied = Translator(preprocessor=apart, **SIZES)
    tied = Translator(preprocessor=apart, tie_embeddings=True, **SIZES)
    three_way = Translator(preprocessor=shared, tie_embeddings=True, **SIZES)
    target_size, d, out = apart.target_vocabulary_size, SIZES["embedding_dim"], 32
    # The V × out kernel goes; an out × d map to the embedding's size comes.
    assert untied.count_params() - tied.count_params() == target_size * out - (out * d + d)
    assert tied.get_layer("encoder").embedding is not tied.get_layer("decoder").embedding
    assert three_way.get_layer("encoder").embedding is three_way.get_layer("decoder").embedding
    embeddings = [w for w in three_way.weights if w.path.endswith("embeddings")]
    assert len(embeddings) == 1
    # The logits move with the embedding: it is the output layer.
    decoder = tied.get_layer("decoder")
    states = np.ones((1, out), "float32")
    before = keras.ops.convert_to_numpy(decoder.logits(states))
    decoder.embedding.embeddings.assign(decoder.embedding.embeddings * 2.0)
    after = keras.ops.convert_to_numpy(decoder.logits(states))
    bias = keras.ops.convert_to_numpy(decoder.output_projection.bias)
    np.testing.assert_allclose(after - bias, 2.0 * (before - bias), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shared", [False, True])
def test_a_tied_translator_learns_reloads_and_exports(shared, tmp_path):
    sources, targets = number_pairs()
    preprocessor = TranslatorPreprocessor.from_texts(sources, targets,
                                                     shared_vocabulary=shared)
    model = Translator(preprocessor=preprocessor, tie_embeddings=True)
    model.compile()
    # Measured over seeds 0–9 (oneDNN on): the last epoch's loss is 0.29–0.41 of the
    # first's, vocabulary shared or not; with oneDNN off all pass (test_seeds_tied.json).
    reloaded = learns_reloads_and_serves(model, sources, targets, tmp_path)
    assert reloaded.get_config()["tie_embeddings"] is True
    assert (reloaded.get_layer("encoder").embedding is
            reloaded.get_layer("decoder").embedding) == shared
    assert len(reloaded.weights) == len(model.weights)
    for saved, loaded in zip(model.weights, reloaded.weights, strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(loaded),
                                      keras.ops.convert_to_numpy(saved), err_msg=saved.path)
