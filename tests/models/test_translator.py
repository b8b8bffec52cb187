import numpy as np
import pytest

from models import translator as T
from tests.models import seq2seq


def _small_config(**overrides):
    sizes = dict(encoder_units=8, decoder_units=16, attention_units=8, attention_layer_size=16,
                 embedding_dim=8)
    return T.TranslatorConfig(20, 12, 7, 6, **{**sizes, **overrides})


@pytest.mark.parametrize("attention", T.ATTENTIONS)
@pytest.mark.parametrize("rnn", T.RNNS)
def test_fit_step_and_generate(rng, attention, rnn):
    model = T.compile_translator(
        T.build_translator(_small_config(attention=attention, rnn=rnn)), jit_compile=False
    )
    x, y = seq2seq.batch(rng)
    history = model.fit(x, y, sample_weight=(y != 0).astype("float32"), epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    seq2seq.assert_greedy_and_beam_decode(model, x["source"], 5)


def test_beam_one_equals_greedy_through_the_decoder(rng):
    x, _ = seq2seq.batch(rng)
    seq2seq.assert_beam_one_equals_greedy_through_the_decoder(
        T.build_translator(_small_config()), x["source"], 5
    )


def test_teacher_forced_logits_match_stepwise_decoder(rng):
    x, _ = seq2seq.batch(rng)
    seq2seq.assert_stepwise_decoder_matches_teacher_forcing(T.build_translator(_small_config()), x)


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


def test_all_padding_source_gives_finite_output():
    seq2seq.assert_all_padding_source_gives_finite_output(
        T.build_translator(_small_config()), 7, 5
    )


def test_keras_round_trip_with_safe_mode(rng):
    model = T.build_translator(T.TranslatorConfig(20, 10, 7, 6, attention="luong-concat"))
    seq2seq.keras_round_trip(model, rng, 20, 10)
