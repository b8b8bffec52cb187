import keras
import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import run_layer_contract, to_numpy


def _words(rng, b=2, s=3, w=4, d=5):
    return rng.normal(size=(b, s, w, d)).astype("float32")


def _gru_encoder(units):
    return keras.saving.serialize_keras_object(
        keras.layers.Bidirectional(keras.layers.GRU(units, return_sequences=True))
    )


@pytest.mark.parametrize(
    "kwargs, output_size, n_weights",
    [
        ({}, 5, 6),
        ({"word_units": 3, "sentence_units": 2, "word_encoder": _gru_encoder(2),
          "sentence_encoder": _gru_encoder(3)}, 6, 6 + 12),
        ({"sentence_encoder": keras.saving.serialize_keras_object(keras.layers.Dense(7))}, 7, 8),
    ],
)
def test_contract(rng, kwargs, output_size, n_weights):
    mask = np.ones((2, 3, 4), bool)
    mask[0, 2] = False  # an empty sentence
    mask[1, :, 3] = False
    run_layer_contract(
        keras_attn.HierarchicalAttention, kwargs, {"inputs": _words(rng), "mask": mask},
        [(2, output_size), (2, 3, 4), (2, 3)], call_kwargs={"return_attention_scores": True},
        expect_trainable_weights=n_weights,
    )


def test_without_encoders_it_is_attention_pooling_twice(rng):
    words = _words(rng)
    mask = rng.random((2, 3, 4)) < 0.7
    mask[:, :, 0] = True
    han = keras_attn.HierarchicalAttention(word_units=3, sentence_units=2)
    document, word_weights, sentence_weights = han(words, mask=mask, return_attention_scores=True)
    sentences, expected_word_weights = han.word_attention(
        words.reshape(6, 4, 5), mask=mask.reshape(6, 4), return_attention_scores=True
    )
    expected_document, expected_sentence_weights = han.sentence_attention(
        to_numpy(sentences).reshape(2, 3, 5), return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(word_weights), to_numpy(expected_word_weights).reshape(2, 3, 4))
    np.testing.assert_allclose(to_numpy(sentence_weights), to_numpy(expected_sentence_weights))
    np.testing.assert_allclose(to_numpy(document), to_numpy(expected_document), atol=1e-6)


def test_empty_sentences_and_documents(rng):
    words = _words(rng)
    mask = np.ones((2, 3, 4), bool)
    mask[0, 1] = False
    mask[1] = False
    han = keras_attn.HierarchicalAttention()
    document, word_weights, sentence_weights = han(words, mask=mask, return_attention_scores=True)
    document, sentence_weights = to_numpy(document), to_numpy(sentence_weights)
    assert np.all(np.isfinite(document))
    assert sentence_weights[0, 1] == 0 and np.isclose(sentence_weights[0].sum(), 1)
    np.testing.assert_array_equal(document[1], 0.0)
    np.testing.assert_array_equal(to_numpy(word_weights)[1], 0.0)


def _documents(rng, n, sentences=4, words=5, vocab=20, keyword=1):
    """Token ids (0 = padding); label 1 if the keyword occurs (in one sentence)."""
    ids = rng.integers(2, vocab, size=(n, sentences, words))
    lengths = rng.integers(2, words + 1, size=(n, sentences))
    ids[np.arange(words)[None, None, :] >= lengths[..., None]] = 0
    labels = rng.random(n) < 0.5
    where = rng.integers(0, sentences, size=n)
    ids[labels, where[labels], 0] = keyword
    return ids, labels.astype("float32"), where


def test_learns_to_attend_to_the_sentence_and_word_that_decide():
    """A keyword-spotting task: attention lands on the keyword's sentence and word."""
    rng = np.random.default_rng(0)
    ids = keras.Input((4, 5), dtype="int32")
    embedded = keras.layers.Embedding(20, 16, mask_zero=True)(ids)
    han = keras_attn.HierarchicalAttention(word_units=16, sentence_units=16)
    document, word_weights, sentence_weights = han(embedded, return_attention_scores=True)
    label = keras.layers.Dense(1, activation="sigmoid")(document)
    model = keras.Model(ids, label)
    model.compile(keras.optimizers.Adam(0.01), "binary_crossentropy", metrics=["accuracy"])
    train_ids, train_labels, _ = _documents(rng, 4000)
    model.fit(train_ids, train_labels, epochs=8, batch_size=64, verbose=0)

    test_ids, test_labels, where = _documents(rng, 500)
    _, accuracy = model.evaluate(test_ids, test_labels, verbose=0)
    assert accuracy >= 0.95, accuracy
    attention = keras.Model(ids, [word_weights, sentence_weights])
    words_alpha, sentences_alpha = (to_numpy(x) for x in attention.predict(test_ids, verbose=0))
    positive = test_labels == 1
    on_sentence = sentences_alpha[positive, where[positive]]
    on_word = words_alpha[positive, where[positive], 0]
    assert on_sentence.mean() >= 0.8 and on_word.mean() >= 0.8, (on_sentence.mean(), on_word.mean())


def test_bad_input_is_named(rng):
    with pytest.raises(ValueError, match=r"`inputs` must have rank 4; received `inputs` of rank 3"):
        keras_attn.HierarchicalAttention()(_words(rng)[0])
    with pytest.raises(ValueError, match=r"`mask` must have shape \(2, 3, 4\)"):
        keras_attn.HierarchicalAttention()(_words(rng), mask=np.ones((2, 3), bool))
    with pytest.raises(TypeError, match=r"`word_encoder` must be a keras.layers.Layer, its serialized config or None; received str"):
        keras_attn.HierarchicalAttention(word_encoder="gru")
