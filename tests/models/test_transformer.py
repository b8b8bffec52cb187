import keras
import numpy as np
import pytest

from keras_attn.models import translator as T
from keras_attn.models.translator import transformer as TR
from tests.keras_attn.contract import to_numpy
from tests.models import seq2seq


def _small(**overrides):
    sizes = dict(model_dim=16, num_heads=2, num_layers=2, feedforward_dim=32)
    return TR.TransformerTranslator(20, 12, 6, **{**sizes, **overrides})


def test_fit_lowers_the_loss_and_generate_decodes(rng):
    model = T.compile_translator(_small(), 1e-2, jit_compile=False)
    x, y = seq2seq.batch(rng)
    history = model.fit(x, y, epochs=100, verbose=0)
    loss = history.history["loss"]
    assert np.all(np.isfinite(loss)) and loss[-1] < 0.1 * loss[0]
    greedy = seq2seq.assert_greedy_and_beam_decode(model, x["source"], 5)
    steps = greedy["lengths"][0]
    np.testing.assert_allclose(greedy["alignments"][0, :steps].sum(-1), 1.0, rtol=1e-5)
    # Teacher forcing memorised the batch: greedy decoding reproduces the targets.
    np.testing.assert_array_equal(greedy["tokens"], y)


@pytest.mark.parametrize("rope_max_wavelength", [None, 100.0])
def test_teacher_forced_logits_match_stepwise_decoder(rng, rope_max_wavelength):
    x, _ = seq2seq.batch(rng)
    model = _small(rope_max_wavelength=rope_max_wavelength)
    seq2seq.assert_stepwise_decoder_matches_teacher_forcing(model, x)


def test_beam_one_equals_greedy_through_the_decoder(rng):
    x, _ = seq2seq.batch(rng)
    seq2seq.assert_beam_one_equals_greedy_through_the_decoder(
        _small(), x["source"], 5
    )


@pytest.mark.parametrize("rope_max_wavelength", [None, 100.0])
def test_decoder_is_causal_and_ignores_source_padding(rng, rope_max_wavelength):
    model = _small(rope_max_wavelength=rope_max_wavelength)
    x, _ = seq2seq.batch(rng)
    logits = to_numpy(model(x))
    changed = dict(x, target_in=x["target_in"].copy())
    changed["target_in"][:, 3:] = 7
    out = to_numpy(model(changed))
    np.testing.assert_allclose(out[:, :3], logits[:, :3], rtol=1e-5, atol=1e-6)
    assert np.abs(out[:, 3:] - logits[:, 3:]).max() > 1e-3  # later positions do see it
    # More padding on the source changes nothing.
    padded = dict(x, source=np.pad(x["source"], ((0, 0), (0, 4))))
    np.testing.assert_allclose(to_numpy(model(padded)), logits, rtol=1e-5, atol=1e-5)


def test_all_padding_source_gives_finite_output():
    seq2seq.assert_all_padding_source_gives_finite_output(_small(), 7, 5)


def test_generate_refuses_more_steps_than_the_token_buffer(rng):
    model = _small()
    with pytest.raises(ValueError, match=r"`max_length` must be at most .* \(5, .*received 6"):
        T.decode_ids(model, np.ones((2, 7), "int32"), 6)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"`model_dim` must be divisible by `num_heads`; "
                                         r"received model_dim=30 and num_heads=4"):
        TR.TransformerTranslator(5, 5, 3, model_dim=30, num_heads=4)
    with pytest.raises(ValueError, match=r"`num_layers` must be a positive integer; received 0"):
        TR.TransformerTranslator(5, 5, 3, num_layers=0)
    with pytest.raises(ValueError, match=r"`dropout` must be a number in \[0, 1\); received 1\.5"):
        TR.TransformerTranslator(5, 5, 3, dropout=1.5)
    with pytest.raises(ValueError, match=r"`max_target_length` .* at least 2; received 1"):
        TR.TransformerTranslator(5, 5, 1)
    with pytest.raises(ValueError, match="max_wavelength"):
        TR.TransformerTranslator(5, 5, 3, max_wavelength=-1.0)
    with pytest.raises(ValueError, match="rope_max_wavelength"):
        TR.TransformerTranslator(5, 5, 3, rope_max_wavelength=0.0)
    model = TR.TransformerTranslator(5, 5, np.int64(3), model_dim=8, num_heads=2)
    assert type(model.max_target_length) is int and model.get_layer("decoder").max_length == 2


def test_keras_round_trip_with_safe_mode(rng):
    model = _small(max_wavelength=100.0, dropout=0.1, rope_max_wavelength=50.0)
    loaded = seq2seq.keras_round_trip(model, rng, 20, 12)
    decoder = loaded.get_layer("decoder")
    assert (decoder.max_length, decoder.max_wavelength, decoder.dropout) == (5, 100.0, 0.1)
    attention = decoder.blocks[1].cross_attention
    assert attention.rope_max_wavelength == 50.0


def test_mixed_float16_trains_and_decodes_finite(rng):
    keras.config.set_dtype_policy("mixed_float16")  # the autouse fixture restores float32
    model = T.compile_translator(_small(), jit_compile=False)
    assert model.get_layer("decoder").output_projection.compute_dtype == "float32"
    x, y = seq2seq.batch(rng)
    loss = model.fit(x, y, epochs=3, verbose=0).history["loss"]
    assert np.all(np.isfinite(loss)) and loss[-1] < loss[0]
    out = seq2seq.generate(model, x["source"], 5, beam_width=2)
    assert np.all(np.isfinite(out["scores"])) and np.all(np.isfinite(out["alignments"]))


@pytest.mark.parametrize("rope_max_wavelength", [None, 100.0])
@pytest.mark.parametrize("beam_width", [1, 3])
def test_cached_decoding_equals_recomputing_the_stack(rng, rope_max_wavelength, beam_width):
    """The key/value caches change the work per token, not the result."""
    model = _small(rope_max_wavelength=rope_max_wavelength)
    for weight in model.trainable_weights:  # larger weights: distinct, confident logits
        weight.assign(to_numpy(weight) * 3.0)
    x, _ = seq2seq.batch(rng)
    cached = T.decode_ids(model, x["source"], 5, beam_width=beam_width)
    recomputed = T.decode_ids(model, x["source"], 5, beam_width=beam_width, use_cache=False)
    np.testing.assert_array_equal(to_numpy(cached["tokens"]), to_numpy(recomputed["tokens"]))
    # Summed log-probabilities of 5 steps, added up in another order: float32 rounding.
    np.testing.assert_allclose(to_numpy(cached["scores"]), to_numpy(recomputed["scores"]),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(to_numpy(cached["alignments"]),
                               to_numpy(recomputed["alignments"]), atol=1e-5)


def test_cached_step_states_keep_their_shapes(rng):
    model = _small()
    decoder = model.get_layer("decoder")
    x, _ = seq2seq.batch(rng)
    states = decoder.initial_states(*model.get_layer("encoder")(x["source"]))
    _, new_states, _ = decoder.step(np.full((6,), T.START_ID, "int32"), states)
    assert [tuple(s.shape) for s in new_states] == [tuple(s.shape) for s in states]
    assert tuple(states[-1].shape) == (6, 2, 2, decoder.max_length, 8)  # (B, k/v, heads, T, dim)
