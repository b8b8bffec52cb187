import keras
import numpy as np
import pytest

import keras_attn
from keras_attn import scores
from tests.keras_attn.contract import run_layer_contract, to_numpy, trainable_gradients


def _inputs(rng, b=2, tq=3, tk=5, dq=4, dk=4):
    return {
        "query": rng.normal(size=(b, tq, dq)).astype("float32"),
        "keys": rng.normal(size=(b, tk, dk)).astype("float32"),
    }


@pytest.mark.parametrize(
    "cls, kwargs, dk, n_weights",
    [
        (scores.DotScore, {}, 4, 0),
        (scores.ScaledDotScore, {}, 4, 0),
        (scores.BilinearScore, {}, 6, 1),
        (scores.CosineScore, {"beta": 3.0}, 4, 0),
        (scores.AdditiveScore, {"units": 8}, 6, 4),
        (scores.AdditiveScore, {"units": 8, "normalize": True}, 6, 5),
        (scores.ConcatScore, {"hidden_units": 7}, 6, 3),
    ],
)
def test_score_contract(rng, cls, kwargs, dk, n_weights):
    inputs = _inputs(rng, dk=dk)
    run_layer_contract(
        cls, kwargs, inputs, (2, 3, 5), expect_trainable_weights=n_weights
    )


def test_rank2_query_gives_one_score_row(rng):
    inputs = _inputs(rng)
    run_layer_contract(
        scores.AdditiveScore, {"units": 8},
        {"query": inputs["query"][:, 0], "keys": inputs["keys"]}, (2, 5),
    )


def test_formulas_match_numpy(rng):
    q, k = _inputs(rng).values()
    np.testing.assert_allclose(
        to_numpy(scores.DotScore()(q, k)), q @ k.transpose(0, 2, 1), rtol=1e-5
    )
    np.testing.assert_allclose(
        to_numpy(scores.ScaledDotScore()(q, k)), q @ k.transpose(0, 2, 1) / 2.0, rtol=1e-5
    )
    bilinear = scores.BilinearScore()
    out = to_numpy(bilinear(q, k))
    w = to_numpy(bilinear.key_projection.kernel)  # (dk, dq) = W_aᵀ
    np.testing.assert_allclose(out, np.einsum("bqd,bkd->bqk", q, k @ w), rtol=1e-5)

    cosine = to_numpy(scores.CosineScore(beta=2.5)(q, k))
    qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
    kn = k / np.linalg.norm(k, axis=-1, keepdims=True)
    np.testing.assert_allclose(cosine, 2.5 * qn @ kn.transpose(0, 2, 1), rtol=1e-5, atol=1e-6)

    additive = scores.AdditiveScore(units=6)
    additive(q, k)
    additive.bias.assign(rng.normal(size=6).astype("float32"))
    out = to_numpy(additive(q, k))
    wq = to_numpy(additive.query_projection.kernel)
    wk = to_numpy(additive.key_projection.kernel)
    v, b = to_numpy(additive.v), to_numpy(additive.bias)
    hidden = np.tanh((q @ wq)[:, :, None, :] + (k @ wk)[:, None, :, :] + b)
    np.testing.assert_allclose(out, hidden @ v, rtol=1e-5, atol=1e-6)
    # A single query (rank 2, or Tq = 1), as a decoder step passes, gives the same rows.
    np.testing.assert_allclose(
        to_numpy(additive(q[:, 0], k)), (hidden @ v)[:, 0], rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(additive(q[:, 1:2], k)), (hidden @ v)[:, 1:2], rtol=1e-5, atol=1e-6
    )


def test_additive_single_query_value_and_gradients_match_numpy(rng):
    # A decoder step's shape: one query per row, batch > 2. On TF 2.21's oneDNN
    # AVX-512 kernels a broadcasting rank-4 matmul gave garbage for exactly this.
    b, tk, dq, dk, units = 5, 7, 4, 6, 8
    q = rng.normal(size=(b, dq)).astype("float32")
    k = rng.normal(size=(b, tk, dk)).astype("float32")
    target = rng.normal(size=(b, tk)).astype("float32")
    layer = scores.AdditiveScore(units=units)
    symbolic = {"query": keras.Input((dq,)), "keys": keras.Input((tk, dk))}
    model = keras.Model(symbolic, layer(symbolic["query"], symbolic["keys"]))
    layer.bias.assign(rng.normal(size=units).astype("float32"))
    wq = to_numpy(layer.query_projection.kernel)
    wk = to_numpy(layer.key_projection.kernel)
    v, bias = to_numpy(layer.v), to_numpy(layer.bias)
    hidden = np.tanh((q @ wq)[:, None, :] + k @ wk + bias)  # (b, tk, units)
    expected = hidden @ v
    np.testing.assert_allclose(
        to_numpy(model({"query": q, "keys": k})), expected, rtol=1e-5, atol=1e-6
    )

    d_scores = 2.0 * (expected - target) / expected.size  # of mean((s - target)²)
    d_pre = d_scores[..., None] * v * (1.0 - hidden**2)  # through the tanh
    expected_grads = {
        "v": np.einsum("bt,btu->u", d_scores, hidden),
        "bias": d_pre.sum(axis=(0, 1)),
        "query_projection/kernel": q.T @ d_pre.sum(axis=1),
        "key_projection/kernel": np.einsum("btd,btu->du", k, d_pre),
    }
    grads = trainable_gradients(model, {"query": q, "keys": k}, target)
    for variable, grad in zip(model.trainable_variables, grads, strict=True):
        name = next(n for n in expected_grads if variable.path.endswith(n))
        np.testing.assert_allclose(
            grad, expected_grads.pop(name), rtol=1e-4, atol=1e-6, err_msg=variable.path
        )
    assert not expected_grads


def test_normalized_additive_uses_weight_norm(rng):
    q, k = _inputs(rng).values()
    layer = scores.AdditiveScore(units=6, normalize=True)
    out = to_numpy(layer(q, k))
    layer.v.assign(to_numpy(layer.v) * 7.0)  # the norm divides the scale back out
    np.testing.assert_allclose(to_numpy(layer(q, k)), out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(layer.g), np.sqrt(1 / 6), rtol=1e-6)


def test_precomputed_keys_give_the_same_scores(rng):
    q, k = _inputs(rng, dk=6).values()
    for layer in (scores.AdditiveScore(8), scores.ConcatScore(5, use_bias=True),
                  scores.ConcatScore(5), scores.BilinearScore()):
        layer.build(q.shape, k.shape)
        if getattr(layer, "bias", None) is not None:
            # Non-zero, so precomputed keys that left the bias out would differ.
            layer.bias.assign(rng.normal(size=layer.bias.shape).astype("float32"))
        direct = to_numpy(layer(q, k))
        again = to_numpy(layer.score(q, layer.precompute_keys(k)))
        np.testing.assert_allclose(direct, again, rtol=1e-6)


def test_additive_precompute_keys_before_build_with_default_units(rng):
    q, k = _inputs(rng, dk=6).values()
    layer = scores.AdditiveScore()  # units = the key size, known from the keys
    keys = layer.precompute_keys(k)
    assert tuple(keys.shape) == (2, 5, 6)
    np.testing.assert_allclose(to_numpy(layer.score(q, keys)), to_numpy(layer(q, k)), rtol=1e-6)
    assert len(layer.weights) == 4


def test_cosine_zero_vector_and_per_query_beta():
    q = np.array([[[1.0, 0.0], [0.0, 0.0]]], "float32")  # second query is zero
    k = np.array([[[2.0, 0.0], [0.0, 0.0], [0.0, 3.0]]], "float32")  # zero key
    out = to_numpy(scores.CosineScore()(q, k, beta=np.array([[4.0, 9.0]], "float32")))
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, [[[4.0, 0.0, 0.0], [0.0, 0.0, 0.0]]], atol=1e-6)
    single = to_numpy(scores.CosineScore()(q[:, 0], k, beta=np.array([2.0], "float32")))
    np.testing.assert_allclose(single, [[2.0, 0.0, 0.0]], atol=1e-6)


def test_get_by_name_instance_and_errors():
    assert isinstance(scores.get("additive"), scores.AdditiveScore)
    assert isinstance(scores.get("Scaled-Dot"), scores.ScaledDotScore)
    assert isinstance(scores.get("general"), scores.BilinearScore)
    layer = scores.CosineScore()
    assert scores.get(layer) is layer
    with pytest.raises(ValueError, match="Unknown `score`"):
        scores.get("softest")
    with pytest.raises(TypeError, match="`score` must be"):
        scores.get(3)


def test_dot_rejects_mismatched_sizes(rng):
    q, k = _inputs(rng, dk=6).values()
    with pytest.raises(ValueError, match=r"`query` and `keys` must have the same feature size"):
        scores.DotScore()(q, k)


def test_bad_ranks_name_the_argument(rng):
    q, k = _inputs(rng).values()
    with pytest.raises(ValueError, match=r"`query` must have rank 2 or 3; received `query` of rank 4"):
        scores.AdditiveScore(4)(q[None], k)
    with pytest.raises(ValueError, match=r"`keys` must have rank 3"):
        scores.DotScore()(q, k[0])


def test_bilinear_precompute_before_build_is_a_clear_error(rng):
    with pytest.raises(RuntimeError, match="unknown until the layer is built"):
        keras_attn.BilinearScore().precompute_keys(_inputs(rng)["keys"])
