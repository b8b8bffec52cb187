import numpy as np
import pytest

from keras_attn.choices import RNN_CELLS, TRANSLATOR_ATTENTIONS
from keras_attn.models import translator as T
from tests.keras_attn.contract import to_numpy
from tests.models import seq2seq


def _small(**overrides):
    sizes = dict(encoder_units=8, decoder_units=16, attention_units=8, attention_layer_size=16,
                 embedding_dim=8)
    return T.Translator(20, 12, **{**sizes, **overrides})


@pytest.mark.parametrize("attention", TRANSLATOR_ATTENTIONS)
@pytest.mark.parametrize("rnn", RNN_CELLS)
def test_fit_step_and_generate(rng, attention, rnn):
    model = T.compile_translator(
        _small(attention=attention, rnn=rnn), jit_compile=False
    )
    x, y = seq2seq.batch(rng)
    history = model.fit(x, y, sample_weight=(y != 0).astype("float32"), epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    seq2seq.assert_greedy_and_beam_decode(model, x["source"], 5)


def test_beam_one_equals_greedy_through_the_decoder(rng):
    x, _ = seq2seq.batch(rng)
    seq2seq.assert_beam_one_equals_greedy_through_the_decoder(
        _small(), x["source"], 5
    )


def test_teacher_forced_logits_match_stepwise_decoder(rng):
    x, _ = seq2seq.batch(rng)
    seq2seq.assert_stepwise_decoder_matches_teacher_forcing(_small(), x)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="`attention` must be one of"):
        T.Translator(5, 5, attention="hard")
    with pytest.raises(ValueError, match="`decoder_units` must equal 2"):
        T.Translator(5, 5, attention="luong-dot", encoder_units=8, decoder_units=8)
    with pytest.raises(ValueError, match=r"`source_vocab_size` must be a positive integer or None; received 0"):
        T.Translator(0, 5)
    with pytest.raises(ValueError, match=r"`encoder_units` must be a positive integer; received 2\.5"):
        T.Translator(5, 5, encoder_units=2.5)
    with pytest.raises(ValueError, match=r"`dropout` must be a number in \[0, 1\); received 2\.0"):
        T.Translator(5, 5, dropout=2.0)  # Keras's cells would clip it to 1
    model = T.Translator(np.int64(5), 5, encoder_units=8)
    assert type(model.source_vocab_size) is int and model.get_config()["encoder_units"] == 8


def test_all_padding_source_gives_finite_output():
    seq2seq.assert_all_padding_source_gives_finite_output(
        _small(), 7, 5
    )


def test_keras_round_trip_with_safe_mode(rng):
    model = T.Translator(20, 10, attention="luong-concat")
    seq2seq.keras_round_trip(model, rng, 20, 10)


def test_reported_loss_is_the_mean_over_real_target_tokens(rng):
    """With heavy padding, `evaluate`'s loss is the mean cross-entropy of the real
    tokens alone (Keras's default reduction would divide by every position)."""
    model = T.compile_translator(_small(), jit_compile=False)
    x, y = seq2seq.batch(rng, n=6, lt=12)
    weights = np.zeros(y.shape, "float32")
    weights[:, :2] = 1.0  # 2 real tokens of 11 in every row
    weights[0, :] = 1.0
    logits = np.asarray(to_numpy(model(x)), "float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    token_loss = -np.take_along_axis(log_probs, y[..., None], -1)[..., 0]
    expected = (token_loss * weights).sum() / weights.sum()
    loss = model.evaluate(x, y, sample_weight=weights, batch_size=len(y), verbose=0,
                          return_dict=True)["loss"]
    assert loss == pytest.approx(expected, rel=1e-5)
    assert expected > 1.5 * (token_loss * weights).mean()  # the padding would have shrunk it


@pytest.mark.parametrize("build", ["rnn", "transformer"])
def test_output_bias_starts_at_the_target_log_frequencies(build):
    from keras_attn.models.translator.transformer import TransformerTranslator

    model = (_small() if build == "rnn" else
             TransformerTranslator(20, 12, 6, model_dim=8, num_heads=2))
    counts = np.arange(12, dtype="float64")
    T.initialize_output_bias(model, counts)
    bias = to_numpy(model.get_layer("decoder").output_projection.bias)
    np.testing.assert_allclose(np.exp(bias), (counts + 1) / (counts + 1).sum(), rtol=1e-5)
    with pytest.raises(ValueError, match=r"one count per target token, shape \(12,\); received shape \(5,\)"):
        T.initialize_output_bias(model, np.ones(5))
    with pytest.raises(ValueError, match="finite and non-negative"):
        T.initialize_output_bias(model, -np.ones(12))


@pytest.mark.parametrize("attention",
                         [a for a in TRANSLATOR_ATTENTIONS if a != "bahdanau-monotonic"])
@pytest.mark.parametrize("rnn", RNN_CELLS)
def test_without_input_feeding_attention_runs_over_all_steps_at_once(rng, attention, rnn):
    """Teacher forcing attends for every step in one batched call, and still equals
    the step-by-step decoder."""
    model = _small(attention=attention, rnn=rnn, input_feeding=False)
    assert model.get_layer("decoder").cell.parallel_over_time
    x, _ = seq2seq.batch(rng)
    seq2seq.assert_stepwise_decoder_matches_teacher_forcing(model, x)


def test_monotonic_attention_and_input_feeding_stay_step_by_step():
    for overrides in ({"input_feeding": True}, {"input_feeding": False,
                                                "attention": "bahdanau-monotonic"}):
        model = _small(**overrides)
        assert not model.get_layer("decoder").cell.parallel_over_time


@pytest.mark.parametrize("beam_width", [1, 3])
def test_the_compiled_generator_decodes_as_generate(rng, beam_width):
    """`Generator.predict_on_batch` runs `generate` compiled by the backend's trainer."""
    model = _small()
    x, _ = seq2seq.batch(rng)
    eager = T.decode_ids(model, x["source"], 5, beam_width=beam_width)
    compiled = T.Generator(model, 5, beam_width).predict_on_batch(x["source"])
    np.testing.assert_array_equal(to_numpy(compiled["tokens"]), to_numpy(eager["tokens"]))
    np.testing.assert_allclose(to_numpy(compiled["scores"]), to_numpy(eager["scores"]), atol=1e-5)
