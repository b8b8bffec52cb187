import re

import keras
import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import (
    assert_ignores_masked_steps,
    run_layer_contract,
    to_numpy,
)


def _inputs(rng, b=2, tq=5, tk=7, d=16):
    return {
        "query": rng.normal(size=(b, tq, d)).astype("float32"),
        "value": rng.normal(size=(b, tk, d)).astype("float32"),
    }


def test_contract_cross_attention_with_scores(rng):
    run_layer_contract(
        keras_attn.MultiHeadAttention,
        {"num_heads": 4, "key_dim": 8, "value_dim": 6},
        _inputs(rng),
        [(2, 5, 16), (2, 4, 5, 7)],
        call_kwargs={"return_attention_scores": True},
        expect_trainable_weights=7,  # no key bias: it cannot change the output
    )


def test_contract_causal_rope_and_concat_heads(rng):
    x = rng.normal(size=(2, 6, 16)).astype("float32")
    run_layer_contract(
        keras_attn.MultiHeadAttention,
        {"num_heads": 2, "key_dim": 4, "use_output_projection": False, "rope_max_wavelength": 100},
        {"query": x, "value": x},
        (2, 6, 8),
        call_kwargs={"use_causal_mask": True},
    )


def test_contract_with_explicit_mask_and_alibi_bias(rng):
    inputs = _inputs(rng, tq=7)
    inputs["mask"] = np.array([[1] * 7, [1] * 4 + [0] * 3], bool)
    bias = to_numpy(keras_attn.ALiBiBias(4)(inputs["query"]))
    inputs["attention_bias"] = np.repeat(bias, 2, axis=0)  # a model input needs the batch
    run_layer_contract(
        keras_attn.MultiHeadAttention, {"num_heads": 4, "key_dim": 4, "output_shape": 10},
        inputs, (2, 7, 10),
    )


def test_masks_causal_and_padding(rng):
    inputs = _inputs(rng)
    keep = np.array([[1] * 7, [1] * 2 + [0] * 5], bool)
    layer = keras_attn.MultiHeadAttention(num_heads=2, key_dim=4)
    assert_ignores_masked_steps(
        lambda x: layer(x["query"], x["value"], mask=keep), inputs, "value", keep
    )
    x = inputs["value"]
    _, w = layer(x, x, use_causal_mask=True, return_attention_scores=True)
    w = to_numpy(w)
    assert np.all(np.triu(w, k=1) == 0)
    # Fully masked rows (a padded query) give zero weights, not uniform ones.
    tokens = keras.Input((None,), dtype="int32")
    emb = keras.layers.Embedding(10, 8, mask_zero=True)(tokens)
    out, weights = keras_attn.MultiHeadAttention(2, 4)(emb, emb, return_attention_scores=True)
    model = keras.Model(tokens, [out, weights])
    _, weights = model(np.array([[1, 2, 0], [3, 0, 0]]))
    weights = to_numpy(weights)
    assert np.all(weights[1, :, 1:] == 0) and np.all(weights[0, :, :, 2] == 0)
    np.testing.assert_allclose(weights[0, :, :2].sum(-1), 1.0, rtol=1e-5)


def test_output_keeps_the_query_mask():
    tokens = keras.Input((None,), dtype="int32")
    emb = keras.layers.Embedding(10, 8, mask_zero=True)(tokens)
    out = keras_attn.MultiHeadAttention(2, 4)(emb, emb)
    pooled = keras.layers.GlobalAveragePooling1D()(out)  # uses the mask
    model = keras.Model(tokens, pooled)
    a = to_numpy(model(np.array([[1, 2, 0, 0]])))
    b = to_numpy(model(np.array([[1, 2, 0, 0, 0, 0]])))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_rope_makes_scores_depend_on_offsets_only(rng):
    layer = keras_attn.MultiHeadAttention(num_heads=1, key_dim=8, rope_max_wavelength=50)
    token = rng.normal(size=(1, 1, 16)).astype("float32")
    x = np.repeat(token, 6, axis=1)  # same token everywhere: only positions differ
    _, w = layer(x, x, return_attention_scores=True)
    log_w = np.log(to_numpy(w)[0, 0])
    # With identical tokens a score depends on the offset i - j alone, so
    # differences of log-weights within a row (the softmax's constant cancels)
    # repeat along the diagonals.
    np.testing.assert_allclose(log_w[3, 1] - log_w[3, 2], log_w[5, 3] - log_w[5, 4], atol=1e-4)
    assert abs(log_w[3, 1] - log_w[3, 2]) > 1e-3


def test_bad_arguments(rng):
    inputs = _inputs(rng)
    layer = keras_attn.MultiHeadAttention(2, 4)
    with pytest.raises(ValueError, match=r"`query` must have rank 3; received `query` of rank 4"):
        layer(inputs["query"][None], inputs["value"])
    with pytest.raises(ValueError, match=r"`key` and `value` must have the same length"):
        layer(inputs["query"], inputs["value"], inputs["value"][:, :3])
    with pytest.raises(ValueError, match=r"`num_heads` must be a positive integer"):
        keras_attn.MultiHeadAttention(0, 4)
    with pytest.raises(ValueError, match=r"`mask` must have shape"):
        layer(inputs["query"], inputs["value"], mask=np.ones((2, 5, 3), bool))
    with pytest.raises(ValueError, match=r"`query` and `value` must have the same batch size"):
        layer(inputs["query"][:1], inputs["value"])
    with pytest.raises(ValueError, match=r"`key` and `value` must have the same batch size"):
        layer(inputs["query"], inputs["value"], inputs["value"][:1])
    for name, shape in (("query_mask", (2, 5)), ("value_mask", (2, 7)), ("key_mask", (2, 7))):
        with pytest.raises(
            ValueError, match=rf"`{name}` must have shape {re.escape(str(shape))}.*received `{name}` of shape \(2, 6\)"
        ):
            layer(inputs["query"], inputs["value"], **{name: np.ones((2, 6), bool)})


@pytest.mark.parametrize("rope", [None, 50.0])
def test_cached_self_attention_step_by_step_equals_causal_attention(rng, rope):
    """Writing each position's keys/values into a fixed cache and attending with the
    cache gives, position by position, the causal attention over the whole sequence."""
    layer = keras_attn.MultiHeadAttention(2, 4, rope_max_wavelength=rope)
    x = rng.normal(size=(3, 6, 8)).astype("float32")
    full = to_numpy(layer(x, x, use_causal_mask=True))
    cache = np.zeros((3, 2, 2, 6, 4), "float32")
    for t in range(6):
        out, cache = layer(x[:, t : t + 1], x[:, t : t + 1], cache=cache, cache_update_index=t,
                           use_causal_mask=True)
        np.testing.assert_allclose(to_numpy(out)[:, 0], full[:, t], atol=1e-5)
    np.testing.assert_allclose(to_numpy(cache), to_numpy(layer.compute_cache(x)), atol=1e-6)


def test_cross_attention_over_a_computed_cache_equals_attention(rng):
    layer = keras_attn.MultiHeadAttention(2, 4, rope_max_wavelength=30.0)
    inputs = _inputs(rng, tq=4, tk=5, d=8)
    mask = np.array([[1] * 5, [1] * 3 + [0] * 2], bool)
    expected, weights = layer(inputs["query"], inputs["value"], mask=mask,
                              return_attention_scores=True)
    cache = layer.compute_cache(inputs["value"])
    for t in range(4):  # one query at a time, at its own position
        out, w, same = layer(inputs["query"][:, t : t + 1], inputs["query"][:, t : t + 1],
                             mask=mask, cache=cache, query_start_index=t,
                             return_attention_scores=True)
        np.testing.assert_allclose(to_numpy(out)[:, 0], to_numpy(expected)[:, t], atol=1e-5)
        np.testing.assert_allclose(to_numpy(w)[:, :, 0], to_numpy(weights)[:, :, t], atol=1e-6)
        assert same is cache


def test_cache_errors_name_the_argument(rng):
    layer = keras_attn.MultiHeadAttention(2, 4)
    x = rng.normal(size=(2, 1, 8)).astype("float32")
    with pytest.raises(ValueError, match=r"`cache` must have shape \(batch, 2, 2, length, 4\); received shape \(2, 2, 3, 5, 4\)"):
        layer(x, x, cache=np.zeros((2, 2, 3, 5, 4), "float32"), cache_update_index=0)
    with pytest.raises(ValueError, match="`use_causal_mask` with a `cache` needs `cache_update_index`"):
        layer(x, x, cache=np.zeros((2, 2, 2, 5, 4), "float32"), use_causal_mask=True)
    with pytest.raises(ValueError, match="needs `key_dim == value_dim`"):
        keras_attn.MultiHeadAttention(2, 4, value_dim=3).compute_cache(np.zeros((2, 3, 8), "float32"))


@pytest.mark.parametrize("causal", [False, True])
def test_fused_path_equals_the_explicit_one(causal):
    # Without weights to return, the layer calls keras.ops.dot_product_attention
    # (a flash kernel on a GPU); with them, the explicit softmax. Same outputs,
    # zeros included for a query that has no key to attend to.
    rng = np.random.default_rng(0)
    layer = keras_attn.MultiHeadAttention(num_heads=2, key_dim=4)
    query = rng.normal(size=(3, 5, 6)).astype("float32")
    value = rng.normal(size=(3, 7, 6)).astype("float32")
    query_mask = np.array([[1] * 5, [1, 1, 1, 0, 0], [0] * 5], bool)
    value_mask = np.array([[1] * 7, [1, 1, 0, 0, 0, 0, 0], [1] * 7], bool)
    kwargs = dict(query_mask=query_mask, value_mask=value_mask, use_causal_mask=causal)
    fused = to_numpy(layer(query, value, **kwargs))
    explicit, _ = layer(query, value, return_attention_scores=True, **kwargs)
    np.testing.assert_allclose(fused, to_numpy(explicit), atol=1e-5)
    assert np.all(np.isfinite(fused))
