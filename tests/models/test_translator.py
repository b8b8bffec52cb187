import os
import tempfile

import keras
import numpy as np
import pytest

from keras_attn import decoding
from models import translator as T
from tests.keras_attn.contract import to_numpy


def _batch(rng, n=6, ls=7, lt=6, vs=20, vt=12):
    source = rng.integers(4, vs, (n, ls)).astype("int32")
    source[1, 4:] = 0
    target = rng.integers(4, vt, (n, lt)).astype("int32")
    target[:, 0] = T.START_ID
    return {"source": source, "target_in": target[:, :-1]}, target[:, 1:]


@pytest.mark.parametrize("attention", T.ATTENTIONS)
@pytest.mark.parametrize("rnn", T.RNNS)
def test_fit_step_and_generate(rng, attention, rnn):
    config = T.TranslatorConfig(20, 12, 7, 6, attention=attention, rnn=rnn,
                                encoder_units=8, decoder_units=16, attention_units=8,
                                attention_layer_size=16, embedding_dim=8)
    model = T.compile_translator(T.build_translator(config), jit_compile=False)
    x, y = _batch(rng)
    history = model.fit(x, y, sample_weight=(y != 0).astype("float32"), epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    greedy = {k: to_numpy(v) for k, v in T.generate(model, x["source"], 5).items()}
    beam1 = {k: to_numpy(v) for k, v in T.generate(model, x["source"], 5, beam_width=1).items()}
    assert greedy["tokens"].shape == (6, 5) and greedy["alignments"].shape == (6, 5, 7)
    np.testing.assert_array_equal(greedy["tokens"], beam1["tokens"])
    beam = {k: to_numpy(v) for k, v in T.generate(model, x["source"], 5, beam_width=3).items()}
    assert beam["tokens"].shape == (6, 5)
    # Padded source positions get no attention.
    assert np.all(greedy["alignments"][1, :, 4:] == 0)


def test_beam_one_equals_greedy_through_the_decoder(rng):
    config = T.TranslatorConfig(20, 12, 7, 6, encoder_units=8, decoder_units=16,
                                attention_units=8, attention_layer_size=16, embedding_dim=8)
    model = T.build_translator(config)
    x, _ = _batch(rng)
    decoder = model.get_layer("decoder")
    memory, mask, cells = model.get_layer("encoder")(x["source"])
    states = decoder.initial_states(memory, mask, cells)
    common = dict(initial_states=states, batch_size=6, max_length=5, start_token=2,
                  end_token=3, alignment_length=7)
    a = to_numpy(decoding.greedy_decode(decoder.step, **common)["tokens"])
    b = to_numpy(decoding.beam_search(decoder.step, beam_width=1, **common)["tokens"])
    np.testing.assert_array_equal(a, b)


def test_teacher_forced_logits_match_stepwise_decoder(rng):
    config = T.TranslatorConfig(20, 12, 7, 6, encoder_units=8, decoder_units=16,
                                attention_units=8, attention_layer_size=16, embedding_dim=8)
    model = T.build_translator(config)
    x, _ = _batch(rng)
    logits = to_numpy(model(x))
    decoder = model.get_layer("decoder")
    memory, mask, cells = model.get_layer("encoder")(x["source"])
    states = decoder.initial_states(memory, mask, cells)
    for t in range(x["target_in"].shape[1]):
        step_logits, states, _ = decoder.step(x["target_in"][:, t], states)
        np.testing.assert_allclose(to_numpy(step_logits), logits[:, t], rtol=1e-4, atol=1e-5)


def test_config_validation():
    with pytest.raises(ValueError, match="`attention` must be one of"):
        T.TranslatorConfig(5, 5, 3, 3, attention="hard")
    with pytest.raises(ValueError, match="`decoder_units` must equal 2"):
        T.TranslatorConfig(5, 5, 3, 3, attention="luong-dot", encoder_units=8, decoder_units=8)
    with pytest.raises(ValueError, match=r"`source_vocab_size` must be a positive integer; received 0"):
        T.TranslatorConfig(0, 5, 3, 3)
    with pytest.raises(ValueError, match=r"`encoder_units` must be a positive integer; received 2\.5"):
        T.TranslatorConfig(5, 5, 3, 3, encoder_units=2.5)
    with pytest.raises(ValueError, match=r"`dropout` must be a number in \[0, 1\); received 2\.0"):
        T.TranslatorConfig(5, 5, 3, 3, dropout=2.0)  # Keras's cells would clip it to 1
    assert T.TranslatorConfig(5, 5, np.int64(3), 3).max_source_length == 3


def test_all_padding_source_gives_finite_output(rng):
    config = T.TranslatorConfig(20, 12, 7, 6, encoder_units=8, decoder_units=16,
                                attention_units=8, attention_layer_size=16, embedding_dim=8)
    model = T.build_translator(config)
    out = T.generate(model, np.zeros((2, 7), "int32"), 5, beam_width=2)
    assert np.all(np.isfinite(to_numpy(out["scores"])))
    assert np.all(to_numpy(out["alignments"]) == 0)


def test_keras_round_trip_with_safe_mode(rng):
    model = T.build_translator(T.TranslatorConfig(20, 10, 7, 6, attention="luong-concat"))
    x = {"source": rng.integers(0, 20, (3, 7)).astype("int32"),
         "target_in": rng.integers(0, 10, (3, 5)).astype("int32")}
    expected = to_numpy(model(x))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.keras")
        model.save(path)
        loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(to_numpy(loaded(x)), expected, rtol=1e-6)
