import keras
import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import (
    assert_ignores_masked_steps,
    run_layer_contract,
    to_numpy,
)


def _inputs(rng, b=3, t=7, h=16, hq=12):
    return {
        "query": rng.normal(size=(b, hq)).astype("float32"),
        "values": rng.normal(size=(b, t, h)).astype("float32"),
    }


@pytest.mark.parametrize("normalize", [False, True])
def test_contract_source_shapes(rng, normalize):
    run_layer_contract(
        keras_attn.BahdanauAttention,
        {"units": 10, "normalize": normalize},
        _inputs(rng),
        [(3, 16), (3, 7)],
        call_kwargs={"return_attention_scores": True},
        expect_trainable_weights=5 if normalize else 4,
    )


def test_contract_with_mask_and_several_queries(rng):
    inputs = _inputs(rng)
    inputs["query"] = rng.normal(size=(3, 4, 12)).astype("float32")
    inputs["mask"] = np.array([[1] * 7, [1] * 3 + [0] * 4, [1] + [0] * 6], bool)
    run_layer_contract(
        keras_attn.BahdanauAttention, {"units": 8}, inputs, [(3, 4, 16), (3, 4, 7)],
        call_kwargs={"return_attention_scores": True},
    )


def test_matches_the_source_formula(rng):
    inputs = _inputs(rng)
    layer = keras_attn.BahdanauAttention(units=10)
    context, weights = (to_numpy(x) for x in layer(inputs["query"], inputs["values"],
                                                   return_attention_scores=True))
    score = layer.score_layer
    w1, w2 = to_numpy(score.query_projection.kernel), to_numpy(score.key_projection.kernel)
    v, b = to_numpy(score.v), to_numpy(score.bias)
    e = np.tanh((inputs["query"] @ w1)[:, None, :] + inputs["values"] @ w2 + b) @ v
    alpha = np.exp(e - e.max(1, keepdims=True))
    alpha /= alpha.sum(1, keepdims=True)
    np.testing.assert_allclose(weights, alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(context, np.einsum("bt,bth->bh", alpha, inputs["values"]), rtol=1e-5, atol=1e-6)


def test_precomputed_keys_before_first_call_and_equal_results(rng):
    inputs = _inputs(rng)
    layer = keras_attn.BahdanauAttention(units=10)
    keys = layer.precompute_keys(inputs["values"])  # layer not built yet
    assert tuple(keys.shape) == (3, 7, 10)

    def assert_same_as_direct(keys):
        fast = layer(inputs["query"], inputs["values"], precomputed_keys=keys,
                     return_attention_scores=True)
        slow = layer(inputs["query"], inputs["values"], return_attention_scores=True)
        for a, b in zip(fast, slow, strict=True):
            np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-6)

    assert_same_as_direct(keys)
    # A non-zero bias, so keys precomputed without it would give other results.
    layer.score_layer.bias.assign(rng.normal(size=10).astype("float32"))
    assert_same_as_direct(layer.precompute_keys(inputs["values"]))


def test_weights_keep_their_order_when_precompute_keys_builds_them(rng):
    # `v` and the bias have the same shape: a different creation order would
    # silently swap them when weights saved from one layer load into the other.
    inputs = _inputs(rng)
    called_first = keras_attn.BahdanauAttention(units=10)
    called_first(inputs["query"], inputs["values"])
    called_first.score_layer.bias.assign(rng.normal(size=10).astype("float32"))
    precomputed_first = keras_attn.BahdanauAttention(units=10)
    precomputed_first.precompute_keys(inputs["values"])
    precomputed_first(inputs["query"], inputs["values"])
    assert len(precomputed_first.weights) == len(called_first.weights) == 4
    precomputed_first.set_weights(called_first.get_weights())
    for a, b in zip(
        precomputed_first(inputs["query"], inputs["values"], return_attention_scores=True),
        called_first(inputs["query"], inputs["values"], return_attention_scores=True),
        strict=True,
    ):
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-6)


def test_padding_mask_explicit_and_from_keras(rng):
    inputs = _inputs(rng)
    keep = np.array([[1] * 7, [1] * 3 + [0] * 4, [1] + [0] * 6], bool)
    layer = keras_attn.BahdanauAttention(units=10)
    assert_ignores_masked_steps(
        lambda x: layer(x["query"], x["values"], mask=keep), inputs, "values", keep
    )
    # The Keras mask of `values` (here from an Embedding) is used without `mask=`.
    tokens = keras.Input((None,), dtype="int32")
    state = keras.Input((12,))
    values = keras.layers.Embedding(30, 16, mask_zero=True)(tokens)
    _, weights = keras_attn.BahdanauAttention(units=6)(state, values,
                                                       return_attention_scores=True)
    model = keras.Model([state, tokens], weights)
    ids = np.array([[5, 6, 0, 0], [7, 0, 0, 0], [1, 2, 3, 4]])
    w = to_numpy(model([inputs["query"], ids]))
    assert np.all(w[0, 2:] == 0) and np.all(w[1, 1:] == 0)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)


def test_bad_inputs(rng):
    inputs = _inputs(rng)
    with pytest.raises(ValueError, match=r"`value` must have rank 3; received `value` of rank 2"):
        keras_attn.BahdanauAttention(4)(inputs["query"], inputs["values"][:, 0])
    with pytest.raises(ValueError, match=r"`units` must be a positive integer"):
        keras_attn.BahdanauAttention(0)


def test_precomputed_keys_of_the_wrong_shape_are_rejected(rng):
    inputs = _inputs(rng)
    layer = keras_attn.BahdanauAttention(units=10)
    keys = layer.precompute_keys(inputs["values"])
    for wrong in (
        rng.normal(size=(3, 7, 16)).astype("float32"),  # the values themselves, not U h + b
        to_numpy(keys)[:, :5],  # another length
        to_numpy(keys)[:2],  # another batch
        to_numpy(keys)[0],  # rank 2
    ):
        with pytest.raises(
            ValueError, match=r"`precomputed_keys` must have shape \(3, 7, 10\), what "
            r"`precompute_keys\(key\)` returns for a key of shape \(3, 7, 16\); received"
        ):
            layer(inputs["query"], inputs["values"], precomputed_keys=wrong)


def test_returns_the_context_as_keras_attention_layers_do(rng):
    """Alone, the context (so it composes like `keras.layers.Attention`); the weights
    with `return_attention_scores=True`, shaped as `Attention`'s."""
    inputs = _inputs(rng)
    layer = keras_attn.BahdanauAttention(units=10)
    context = layer(inputs["query"], inputs["values"])
    assert tuple(context.shape) == (3, 16)
    assert tuple(keras.layers.Dense(5)(context).shape) == (3, 5)
    same, weights = layer(inputs["query"], inputs["values"], return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(same), to_numpy(context), rtol=1e-6)
    assert tuple(weights.shape) == (3, 7)
    several = rng.normal(size=(3, 4, 12)).astype("float32")
    assert tuple(layer(several, inputs["values"], return_attention_scores=True)[1].shape) \
        == (3, 4, 7)


@pytest.mark.parametrize("argument", [{"score": "dot"}, {"use_scale": True}])
def test_arguments_of_other_scores_are_refused(argument):
    (name, value), = argument.items()
    with pytest.raises(ValueError, match=rf"score is additive, so `{name}` is not one of its "
                                         rf"arguments; received {name}={value!r}"):
        keras_attn.BahdanauAttention(8, **argument)
