import numpy as np
import pytest

import keras_attn
from keras_attn.positional.alibi import alibi_slopes
from tests.keras_attn.contract import run_layer_contract, to_numpy


def test_sinusoidal_values_and_contract(rng):
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    out = run_layer_contract(keras_attn.SinusoidalPositionEncoding, {}, {"inputs": x}, (2, 6, 8))[0]
    p, i = np.arange(6)[:, None], np.arange(8)[None, :]
    angle = p / 10000 ** (2 * (i // 2) / 8)
    expected = np.where(i % 2 == 0, np.sin(angle), np.cos(angle))
    np.testing.assert_allclose(out[1], expected, atol=1e-6)
    shifted = to_numpy(keras_attn.SinusoidalPositionEncoding()(x[:, :2], start_index=4))
    np.testing.assert_allclose(shifted[0], expected[4:6], atol=1e-5)


def test_learned_embedding_contract_and_length_limit(rng):
    x = rng.normal(size=(2, 5, 4)).astype("float32")
    run_layer_contract(
        keras_attn.LearnedPositionEmbedding, {"sequence_length": 8}, {"inputs": x}, (2, 5, 4),
        call_kwargs={"start_index": 0}, expect_trainable_weights=1,
    )
    layer = keras_attn.LearnedPositionEmbedding(sequence_length=4)
    with pytest.raises(ValueError, match=r"exceed `sequence_length=4`"):
        layer(x)


def test_rotary_contract_norm_and_relative_scores(rng):
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    out = run_layer_contract(keras_attn.RotaryEmbedding, {}, {"inputs": x}, (2, 6, 8))[0]
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-5)
    rope = keras_attn.RotaryEmbedding()
    q, k = rng.normal(size=(1, 1, 8)).astype("float32"), rng.normal(size=(1, 1, 8)).astype("float32")
    def score(m, n):
        qm = to_numpy(rope(q, start_index=m))
        kn = to_numpy(rope(k, start_index=n))
        return float((qm * kn).sum())
    np.testing.assert_allclose(score(5, 2), score(13, 10), rtol=1e-4)
    with pytest.raises(ValueError, match="even size"):
        rope(rng.normal(size=(1, 2, 5)).astype("float32"))


def test_alibi_slopes_and_bias(rng):
    np.testing.assert_allclose(alibi_slopes(8), [2 ** -(i + 1) for i in range(8)])
    assert len(alibi_slopes(6)) == 6
    np.testing.assert_allclose(alibi_slopes(6)[:4], alibi_slopes(4))
    x = rng.normal(size=(2, 4, 8)).astype("float32")
    bias = run_layer_contract(keras_attn.ALiBiBias, {"num_heads": 2}, {"query": x}, (1, 2, 4, 4),
                              broadcast_batch=True)[0]
    np.testing.assert_allclose(bias[0, 0], -np.abs(np.arange(4)[:, None] - np.arange(4)) / 16)
    # One query step at the end of 4 keys sees distances 3, 2, 1, 0.
    step = to_numpy(keras_attn.ALiBiBias(2)(x[:, :1], x))
    np.testing.assert_allclose(step[0, 0, 0], [-3 / 16, -2 / 16, -1 / 16, 0.0])


@pytest.mark.parametrize("sequence_axis, shape", [(1, (2, 8)), (2, (2, 6, 8)), (5, (2, 6, 8))])
def test_rotary_sequence_axis_must_not_be_the_feature_axis(rng, sequence_axis, shape):
    rope = keras_attn.RotaryEmbedding(sequence_axis=sequence_axis)
    with pytest.raises(
        ValueError,
        match=rf"`sequence_axis={sequence_axis}` must be an axis of `inputs` other than the last",
    ):
        rope(rng.normal(size=shape).astype("float32"))


def test_rotary_negative_sequence_axis_counts_from_the_end(rng):
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    np.testing.assert_allclose(
        to_numpy(keras_attn.RotaryEmbedding(sequence_axis=-2)(x)),
        to_numpy(keras_attn.RotaryEmbedding(sequence_axis=1)(x)),
        atol=1e-6,
    )
