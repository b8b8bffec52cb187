import re

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import keras_attn
from tests.keras_attn.contract import (
    assert_ignores_masked_steps,
    run_layer_contract,
    to_numpy,
)


def _inputs(rng, b=2, tq=3, tk=5, d=4, dv=6):
    return {
        "query": rng.normal(size=(b, tq, d)).astype("float32"),
        "value": rng.normal(size=(b, tk, dv)).astype("float32"),
        "key": rng.normal(size=(b, tk, d)).astype("float32"),
    }


@pytest.mark.parametrize("score", ["dot", "scaled_dot", "general", "additive", "cosine", "concat"])
def test_contract_every_score(rng, score):
    run_layer_contract(
        keras_attn.Attention,
        {"score": score},
        _inputs(rng),
        [(2, 3, 6), (2, 3, 5)],
        call_kwargs={"return_attention_scores": True},
    )


def test_contract_with_mask_scale_and_single_query(rng):
    inputs = _inputs(rng)
    inputs["query"] = inputs["query"][:, 0]
    inputs["mask"] = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    run_layer_contract(
        keras_attn.Attention,
        {"score": "additive", "use_scale": True},
        inputs,
        [(2, 6), (2, 5)],
        call_kwargs={"return_attention_scores": True},
        expect_trainable_weights=5,
    )


def test_weights_match_softmax_reference(rng):
    inputs = _inputs(rng)
    context, weights = keras_attn.Attention(score="dot")(
        inputs["query"], inputs["value"], inputs["key"], return_attention_scores=True
    )
    scores = inputs["query"] @ inputs["key"].transpose(0, 2, 1)
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(to_numpy(weights), expected, rtol=1e-5)
    np.testing.assert_allclose(to_numpy(context), expected @ inputs["value"], rtol=1e-5, atol=1e-6)


def test_explicit_mask_ignores_padded_keys(rng):
    inputs = _inputs(rng)
    keep = np.array([[1, 1, 0, 0, 1], [1, 0, 0, 0, 0]], bool)
    layer = keras_attn.Attention(score="general")

    def run(x):
        return layer(x["query"], x["value"], x["key"], mask=keep, return_attention_scores=True)

    assert_ignores_masked_steps(run, inputs, "value", keep)
    assert_ignores_masked_steps(run, inputs, "key", keep)
    _, weights = run(inputs)
    weights = to_numpy(weights)
    assert np.all(weights[~np.broadcast_to(keep[:, None], weights.shape)] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)


def test_keras_mask_propagation_from_embedding():
    tokens = keras.Input((None,), dtype="int32")
    query_tokens = keras.Input((None,), dtype="int32")
    memory = keras.layers.Embedding(20, 8, mask_zero=True)(tokens)
    query = keras.layers.Embedding(20, 8, mask_zero=True)(query_tokens)
    context, weights = keras_attn.Attention(score="scaled_dot")(
        query, memory, return_attention_scores=True
    )
    model = keras.Model([query_tokens, tokens], [context, weights])
    src = np.array([[3, 4, 5, 0, 0], [6, 7, 0, 0, 0]])
    tgt = np.array([[1, 2, 0], [3, 0, 0]])
    context, weights = (to_numpy(x) for x in model([tgt, src]))
    assert np.all(weights[:, :, 3:] == 0) and np.all(weights[1, :, 2:] == 0)
    # Padded queries attend to nothing: zero weights, zero context.
    assert np.all(weights[0, 2] == 0) and np.all(weights[1, 1:] == 0)
    assert np.all(context[1, 1:] == 0)
    np.testing.assert_allclose(weights[0, :2].sum(-1), 1.0, rtol=1e-5)


def test_list_mask_as_in_keras(rng):
    inputs = _inputs(rng)
    q_mask = np.array([[1, 1, 0], [1, 1, 1]], bool)
    v_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    layer = keras_attn.Attention()
    a = layer(inputs["query"], inputs["value"], inputs["key"], mask=[q_mask, v_mask])
    b = layer(inputs["query"], inputs["value"], inputs["key"], query_mask=q_mask, value_mask=v_mask)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    assert np.all(to_numpy(a)[0, 2] == 0)


def test_causal_mask_hides_the_future(rng):
    x = rng.normal(size=(2, 6, 4)).astype("float32")
    _, weights = keras_attn.Attention(score="scaled_dot")(
        x, x, use_causal_mask=True, return_attention_scores=True
    )
    weights = to_numpy(weights)
    assert np.all(np.triu(weights[0], k=1) == 0) and np.all(np.triu(weights[1], k=1) == 0)
    np.testing.assert_allclose(weights[0, 0, 0], 1.0)


@pytest.mark.parametrize("policy", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_fully_masked_row_gives_zero_weights_and_context(rng, policy):
    inputs = _inputs(rng)
    keep = np.array([[0, 0, 0, 0, 0], [1, 1, 0, 0, 0]], bool)
    layer = keras_attn.Attention(score="additive", dtype=policy)
    context, weights = layer(
        inputs["query"], inputs["value"], inputs["key"], mask=keep, return_attention_scores=True
    )
    context, weights = to_numpy(context).astype("float32"), to_numpy(weights).astype("float32")
    assert np.all(weights[0] == 0) and np.all(context[0] == 0)
    assert np.all(np.isfinite(context)) and np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights[1].sum(-1), 1.0, rtol=1e-2)


def test_fully_masked_row_has_finite_gradients(rng):
    from tests.keras_attn.contract import trainable_gradients

    inputs = _inputs(rng)
    inputs["mask"] = np.array([[0, 0, 0, 0, 0], [1, 1, 1, 0, 0]], bool)
    symbolic = {
        k: keras.Input(v.shape[1:], dtype=str(v.dtype), name=k) for k, v in inputs.items()
    }
    layer = keras_attn.Attention(score="additive")
    model = keras.Model(symbolic, layer(**symbolic))
    grads = trainable_gradients(model, inputs, np.ones((2, 3, 6), "float32"))
    assert all(np.all(np.isfinite(g)) for g in grads)


def test_precomputed_keys_give_the_same_context(rng):
    inputs = _inputs(rng)
    layer = keras_attn.Attention(score="additive")
    direct = layer(inputs["query"], inputs["value"], inputs["key"])
    keys = layer.precompute_keys(inputs["key"])
    again = layer(inputs["query"], inputs["value"], inputs["key"], precomputed_keys=keys)
    np.testing.assert_allclose(to_numpy(direct), to_numpy(again), rtol=1e-6)


def test_dropout_only_in_training(rng):
    inputs = _inputs(rng)
    layer = keras_attn.Attention(dropout=0.5, seed=3)
    args = inputs["query"], inputs["value"], inputs["key"]
    a = to_numpy(layer(*args, training=False))
    b = to_numpy(layer(*args, training=False))
    c = to_numpy(layer(*args, training=True))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_attention_bias_shifts_scores(rng):
    inputs = _inputs(rng)
    bias = np.zeros((1, 3, 5), "float32")
    bias[..., 0] = 50.0  # overwhelms every other key
    _, weights = keras_attn.Attention()(
        inputs["query"], inputs["value"], inputs["key"], attention_bias=bias,
        return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(weights)[..., 0], 1.0, atol=1e-4)


def test_bad_inputs_raise_clear_errors(rng):
    inputs = _inputs(rng)
    layer = keras_attn.Attention()
    with pytest.raises(ValueError, match=r"`query` must have rank 2 or 3; received `query` of rank 4 with shape \(1, 2, 3, 4\)"):
        layer(inputs["query"][None], inputs["value"])
    with pytest.raises(ValueError, match=r"`key` and `value` must have the same length; received `key` of shape \(2, 4, 4\) and `value` of shape \(2, 5, 6\)"):
        layer(inputs["query"], inputs["value"], inputs["key"][:, :4])
    with pytest.raises(ValueError, match=r"`mask` must have shape"):
        layer(inputs["query"], inputs["value"], inputs["key"], mask=np.ones((2, 4), bool))
    with pytest.raises(ValueError, match=r"`query` and `value` must have the same batch size"):
        layer(inputs["query"][:1], inputs["value"])
    with pytest.raises(ValueError, match=r"`key` and `value` must have the same batch size"):
        layer(inputs["query"], inputs["value"], inputs["key"][:1])
    for name, shape in (("query_mask", (2, 3)), ("value_mask", (2, 5)), ("key_mask", (2, 5))):
        with pytest.raises(
            ValueError, match=rf"`{name}` must have shape {re.escape(str(shape))}.*received `{name}` of shape \(2, 4\)"
        ):
            layer(inputs["query"], inputs["value"], inputs["key"], **{name: np.ones((2, 4), bool)})
    with pytest.raises(ValueError, match="Unknown `score`"):
        keras_attn.Attention(score="nope")
    with pytest.raises(ValueError, match=r"`dropout` must be a number in \[0, 1\)"):
        keras_attn.Attention(dropout=1.5)


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    batch=st.integers(1, 3),
    tq=st.integers(1, 4),
    tk=st.integers(1, 6),
    policy=st.sampled_from(["float32", "mixed_float16"]),
    score=st.sampled_from(["dot", "scaled_dot", "additive", "general"]),
    magnitude=st.sampled_from([1.0, 30.0, 300.0]),
)
def test_no_nan_under_random_masks(data, batch, tq, tk, policy, score, magnitude):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    keep = np.array(
        data.draw(st.lists(st.booleans(), min_size=batch * tk, max_size=batch * tk))
    ).reshape(batch, tk)
    query = (magnitude * rng.normal(size=(batch, tq, 4))).astype("float32")
    value = (magnitude * rng.normal(size=(batch, tk, 4))).astype("float32")
    layer = keras_attn.Attention(score=score, dtype=policy)
    context, weights = layer(
        query, value, mask=keep, use_causal_mask=data.draw(st.booleans()),
        return_attention_scores=True,
    )
    context = to_numpy(context).astype("float32")
    weights = to_numpy(weights).astype("float32")
    assert np.all(np.isfinite(context)) and np.all(np.isfinite(weights))
    assert np.all(weights[~np.broadcast_to(keep[:, None], weights.shape)] == 0)
    sums = weights.sum(-1)
    assert np.all((np.abs(sums - 1) < 1e-2) | (sums == 0))
    assert np.all(context[~keep.any(-1)] == 0)


@pytest.mark.parametrize("layer", ["BahdanauAttention", "LuongAttention", "Attention"])
def test_memory_in_the_constructor_is_refused_without_printing_it(layer):
    memory = np.random.rand(4, 50, 16).astype("float32")
    arguments = {"units": 8} if layer == "BahdanauAttention" else {}
    with pytest.raises(ValueError) as refused:
        getattr(keras_attn, layer)(memory=memory, memory_sequence_length=np.full(4, 50),
                                   **arguments)
    message = str(refused.value)
    assert message.startswith(f"{layer} takes the memory when called, not in its constructor")
    assert "memory of shape (4, 50, 16), memory_sequence_length of shape (4,)" in message
    assert len(message) < 400  # the shapes, not the arrays
