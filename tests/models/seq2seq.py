"""Checks every encoder–decoder translator (`models.translator`, `models.transformer`) passes.

Both keep one decoding contract: `encoder(source)` returns the memory and its mask
(first two), `decoder.initial_states(*encoded)` the decoding states, and
`decoder.step(tokens, states) → (logits, states, alignment)`.
"""

import os
import tempfile

import keras
import numpy as np

from keras_attn import decoding
from keras_attn.models import translator as T
from tests.keras_attn.contract import to_numpy


def batch(rng, n=6, ls=7, lt=6, vs=20, vt=12):
    """Random teacher-forcing inputs and targets; row 1's source is padded after 4 tokens."""
    source = rng.integers(4, vs, (n, ls)).astype("int32")
    source[1, 4:] = 0
    target = rng.integers(4, vt, (n, lt)).astype("int32")
    target[:, 0] = T.START_ID
    return {"source": source, "target_in": target[:, :-1]}, target[:, 1:]


def generate(model, source, steps, beam_width=1):
    out = T.decode_ids(model, source, steps, beam_width=beam_width)
    return {k: to_numpy(v) for k, v in out.items()}


def assert_greedy_and_beam_decode(model, source, steps):
    """Shapes; beam width 1 is greedy; padded source positions get no attention."""
    batch, length = source.shape
    greedy = generate(model, source, steps)
    assert greedy["tokens"].shape == (batch, steps)
    assert greedy["alignments"].shape == (batch, steps, length)
    np.testing.assert_array_equal(generate(model, source, steps, 1)["tokens"], greedy["tokens"])
    assert generate(model, source, steps, 3)["tokens"].shape == (batch, steps)
    padded = source == T.PAD_ID
    assert np.all(np.where(padded[:, None, :], greedy["alignments"], 0.0) == 0)
    return greedy


def _start(model, source):
    decoder = model.get_layer("decoder")
    return decoder, decoder.initial_states(*model.get_layer("encoder")(source))


def assert_beam_one_equals_greedy_through_the_decoder(model, source, steps):
    decoder, states = _start(model, source)
    common = dict(initial_states=states, batch_size=source.shape[0], max_length=steps,
                  start_token=T.START_ID, end_token=T.END_ID, alignment_length=source.shape[1])
    a = to_numpy(decoding.greedy_decode(decoder.step, **common)["tokens"])
    b = to_numpy(decoding.beam_search(decoder.step, beam_width=1, **common)["tokens"])
    np.testing.assert_array_equal(a, b)


def assert_stepwise_decoder_matches_teacher_forcing(model, x):
    logits = to_numpy(model(x))
    decoder, states = _start(model, x["source"])
    for t in range(x["target_in"].shape[1]):
        step_logits, states, _ = decoder.step(x["target_in"][:, t], states)
        np.testing.assert_allclose(to_numpy(step_logits), logits[:, t], rtol=1e-4, atol=1e-5)


def assert_all_padding_source_gives_finite_output(model, length, steps):
    out = generate(model, np.zeros((2, length), "int32"), steps, beam_width=2)
    assert np.all(np.isfinite(out["scores"]))
    assert np.all(out["alignments"] == 0)


def keras_round_trip(model, rng, source_vocab, target_vocab):
    """Saves `model` as `.keras`, loads it with `safe_mode=True`, checks it is the same
    class with the same config and gives equal logits; returns the loaded model."""
    x = {"source": rng.integers(0, source_vocab, (3, 7)).astype("int32"),
         "target_in": rng.integers(0, target_vocab, (3, 5)).astype("int32")}
    expected = to_numpy(model(x))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.keras")
        model.save(path)
        loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded) is type(model) and loaded.get_config() == model.get_config()
    np.testing.assert_allclose(to_numpy(loaded(x)), expected, rtol=1e-6, atol=1e-6)
    return loaded
