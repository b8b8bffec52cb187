import keras
import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import run_layer_contract, to_numpy


def _x(rng, b=2, t=13, d=8):
    return rng.normal(size=(b, t, d)).astype("float32")


def _phi(a):
    return np.where(a > 0, a + 1, np.exp(a))


def _reference(layer, query, value, causal=False, key_padding=None, query_padding=None):
    """Eq. 5 of Katharopoulos et al. with the explicit (T × T) similarity matrix."""
    q = _phi(to_numpy(layer.query_dense(query)).astype("float64"))
    k = _phi(to_numpy(layer.key_dense(value)).astype("float64"))
    v = to_numpy(layer.value_dense(value)).astype("float64")
    similarity = np.einsum("bhqd,bhkd->bhqk", q, k)
    if causal:
        similarity = similarity * np.tril(np.ones(similarity.shape[-2:]))
    if key_padding is not None:
        similarity = similarity * key_padding[:, None, None, :]
    total = similarity.sum(-1, keepdims=True)
    weights = np.divide(similarity, total, out=np.zeros_like(similarity), where=total > 0)
    if query_padding is not None:
        weights = weights * query_padding[:, None, :, None]
    heads = np.einsum("bhqk,bhkd->bhqd", weights, v)
    return heads.transpose(0, 2, 1, 3).reshape(heads.shape[0], heads.shape[2], -1), weights


@pytest.mark.parametrize(
    "kwargs, call_kwargs",
    [
        ({"num_heads": 2, "key_dim": 4}, {}),
        ({"num_heads": 2, "key_dim": 4, "chunk_size": 4, "feature_map": "relu"},
         {"use_causal_mask": True}),
        ({"num_heads": 1, "key_dim": 8, "rope_max_wavelength": 100, "chunk_size": 5},
         {"use_causal_mask": True}),
    ],
)
def test_contract(rng, kwargs, call_kwargs):
    x = _x(rng)
    inputs = {"query": x, "value": x, "mask": np.arange(13)[None, :] < np.array([[9], [13]])}
    run_layer_contract(
        keras_attn.LinearAttention, kwargs, inputs, [(2, 13, 8), (2, 2 if kwargs["num_heads"] == 2 else 1, 13, 13)],
        call_kwargs={"return_attention_scores": True, **call_kwargs},
    )


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("chunk_size", [1, 4, 64])
def test_equals_the_quadratic_form(rng, causal, chunk_size):
    x = _x(rng)
    key_padding = np.array([[1] * 10 + [0] * 3, [1] * 13], "float32")
    query_padding = np.array([[1] * 12 + [0], [1] * 13], "float32")
    layer = keras_attn.LinearAttention(
        num_heads=2, key_dim=4, chunk_size=chunk_size, use_output_projection=False
    )
    output, weights = layer(
        x, x, value_mask=key_padding.astype(bool), query_mask=query_padding.astype(bool),
        use_causal_mask=causal, return_attention_scores=True,
    )
    expected, expected_weights = _reference(layer, x, x, causal, key_padding, query_padding)
    np.testing.assert_allclose(to_numpy(output), expected, atol=2e-6)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, atol=1e-6)


def test_causal_outputs_ignore_the_future(rng):
    x = _x(rng, t=20)
    layer = keras_attn.LinearAttention(num_heads=2, key_dim=4, chunk_size=6)
    before = to_numpy(layer(x, x, use_causal_mask=True))
    changed = x.copy()
    changed[:, 11:] = rng.normal(scale=10, size=changed[:, 11:].shape)
    after = to_numpy(layer(changed, changed, use_causal_mask=True))
    np.testing.assert_allclose(after[:, :11], before[:, :11], atol=1e-5)
    assert not np.allclose(after[:, 11:], before[:, 11:])


def test_no_unmasked_key_gives_zero_and_no_nan(rng):
    x = _x(rng)
    layer = keras_attn.LinearAttention(num_heads=2, key_dim=4, use_output_projection=False)
    mask = np.zeros((2, 13), bool)
    mask[1, 5] = True
    for causal in (False, True):
        output, weights = layer(x, x, mask=mask, use_causal_mask=causal, return_attention_scores=True)
        output, weights = to_numpy(output), to_numpy(weights)
        assert np.all(np.isfinite(output)) and np.all(np.isfinite(weights))
        np.testing.assert_array_equal(output[0], 0.0)
        if causal:  # queries before the one valid key see none
            np.testing.assert_array_equal(output[1, :5], 0.0)


def test_long_sequences_stay_finite_in_mixed_float16(rng):
    x = rng.normal(scale=3.0, size=(1, 4096, 8)).astype("float32")
    full = keras_attn.LinearAttention(num_heads=2, key_dim=4)
    half = keras_attn.LinearAttention(num_heads=2, key_dim=4, dtype="mixed_float16")
    expected = to_numpy(full(x, x, use_causal_mask=True))
    half(x, x)
    half.set_weights(full.get_weights())
    output = to_numpy(half(x, x, use_causal_mask=True)).astype("float32")
    assert np.all(np.isfinite(output))
    np.testing.assert_allclose(output, expected, atol=5e-2, rtol=5e-2)


def test_trains_as_a_causal_language_model_layer():
    """Next-token prediction on a repeating pattern: loss falls well below chance."""
    rng = np.random.default_rng(0)
    vocab, length = 8, 32
    start = rng.integers(0, vocab, size=(512, 1))
    tokens = (start + np.arange(length + 1)[None, :]) % vocab
    ids = keras.Input((length,), dtype="int32")
    x = keras.layers.Embedding(vocab, 16)(ids)
    x = x + keras_attn.LinearAttention(num_heads=2, key_dim=8, chunk_size=8)(
        x, x, use_causal_mask=True
    )
    logits = keras.layers.Dense(vocab)(x)
    model = keras.Model(ids, logits)
    model.compile(
        keras.optimizers.Adam(0.01),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(tokens[:, :-1], tokens[:, 1:], epochs=5, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < 0.1 * np.log(vocab), history.history["loss"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"dropout": 0.1}, r"`dropout` does not apply to LinearAttention"),
        ({"feature_map": "softmax"}, r"`feature_map` must be one of \('elu', 'relu'\)"),
        ({"chunk_size": 0}, r"`chunk_size` must be a positive integer; received 0"),
        ({"key_dim": 0}, r"`key_dim` must be a positive integer; received 0"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        keras_attn.LinearAttention(**{"num_heads": 2, "key_dim": 4, **kwargs})


def test_bad_call_inputs(rng):
    x = _x(rng)
    layer = keras_attn.LinearAttention(num_heads=2, key_dim=4)
    with pytest.raises(ValueError, match=r"`attention_bias` needs the score matrix"):
        layer(x, x, attention_bias=np.zeros((1, 2, 13, 13), "float32"))
    with pytest.raises(ValueError, match=r"`mask` must be a \(B, Tk\) key padding mask.*shape \(2, 13, 13\)"):
        layer(x, x, mask=np.ones((2, 13, 13), bool))
    with pytest.raises(ValueError, match=r"`use_causal_mask` needs as many queries as keys; received 13 queries and 5 keys"):
        layer(x, x[:, :5], use_causal_mask=True)
    with pytest.raises(ValueError, match=r"`query` must have rank 3"):
        layer(x[:, 0], x)
    with pytest.raises(ValueError, match=r"`query` and `value` must have the same batch size"):
        layer(x, x[:1])
