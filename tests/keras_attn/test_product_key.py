import keras
import numpy as np
import pytest

from keras_attn.memory import ProductKeyMemory
from tests.keras_attn.contract import run_layer_contract, to_numpy, trainable_gradients


@pytest.mark.parametrize(
    "kwargs, shape, n_weights",
    [
        ({"num_keys": 8, "top_k": 3, "key_dim": 6}, (4, 5, 10), 6),
        ({"num_keys": 6, "top_k": 2, "key_dim": 4, "num_heads": 2, "value_dim": 7,
          "query_batch_norm": False}, (4, 10), 4),
    ],
)
def test_contract(rng, kwargs, shape, n_weights):
    heads, k = kwargs.get("num_heads", 1), kwargs["top_k"]
    output_shape = (*shape[:-1], kwargs.get("value_dim", shape[-1]))
    run_layer_contract(
        ProductKeyMemory, kwargs, {"inputs": rng.normal(size=shape).astype("float32")},
        [output_shape, (*shape[:-1], heads, k), (*shape[:-1], heads, k)],
        call_kwargs={"return_attention_scores": True}, expect_trainable_weights=n_weights,
        mixed_tolerance=5e-2,
    )


def test_top_k_is_exact_over_all_product_keys(rng):
    """The k×k candidate search finds the same k slots as scoring all n² full keys."""
    n, k, key_dim, heads = 16, 5, 8, 2
    memory = ProductKeyMemory(n, top_k=k, key_dim=key_dim, num_heads=heads, query_batch_norm=False)
    x = rng.normal(size=(30, 12)).astype("float32")
    output, slots, weights = (to_numpy(t) for t in memory(x, return_attention_scores=True))

    query = (x @ to_numpy(memory.query_projection.kernel)
             + to_numpy(memory.query_projection.bias)).reshape(30, heads, key_dim)
    sub_keys = to_numpy(memory.sub_keys)  # (2, heads, n, key_dim / 2)
    full_keys = np.concatenate(  # (heads, n², key_dim): k_ij = [c_i; c'_j]
        [np.repeat(sub_keys[0], n, axis=1), np.tile(sub_keys[1], (1, n, 1))], axis=-1
    )
    scores = np.einsum("rhd,hsd->rhs", query, full_keys)
    expected_slots = np.argsort(-scores, axis=-1)[..., :k]
    np.testing.assert_array_equal(np.sort(slots, -1), np.sort(expected_slots, -1))
    best = np.take_along_axis(scores, expected_slots, -1)
    expected_weights = np.exp(best - best.max(-1, keepdims=True))
    expected_weights /= expected_weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.sort(weights, -1), np.sort(expected_weights, -1), atol=1e-5)
    values = to_numpy(memory.values)
    expected = np.einsum("rhk,rhkv->rv", weights, values[slots])
    np.testing.assert_allclose(output, expected, atol=1e-5)


def test_only_the_read_slots_get_a_gradient(rng):
    memory = ProductKeyMemory(16, top_k=2, key_dim=4, query_batch_norm=False)
    inputs = keras.Input((6,), name="inputs")
    model = keras.Model({"inputs": inputs}, memory(inputs, return_attention_scores=True))
    x = rng.normal(size=(3, 6)).astype("float32")
    _, slots, _ = model({"inputs": x})
    gradients = trainable_gradients(model, {"inputs": x}, np.ones((3, 6), "float32"))
    position = [v.path for v in model.trainable_variables].index(memory.values.path)
    touched = np.flatnonzero(np.any(gradients[position] != 0, axis=-1))
    np.testing.assert_array_equal(touched, np.unique(to_numpy(slots)))


def test_learns_a_large_lookup_table():
    """1,024 random inputs → random targets: a 4,096-slot memory fits them.

    A linear map cannot (its least-squares loss stays near the targets' variance, 1).
    """
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1024, 16)).astype("float32")
    y = rng.normal(size=(1024, 8)).astype("float32")
    inputs = keras.Input((16,))
    model = keras.Model(inputs, ProductKeyMemory(64, top_k=8, key_dim=16, value_dim=8)(inputs))
    model.compile(keras.optimizers.Adam(0.01), "mse")
    history = model.fit(x, y, epochs=60, batch_size=64, verbose=0)
    loss = model.evaluate(x, y, verbose=0)
    assert loss < 0.25 * history.history["loss"][0], (loss, history.history["loss"][0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_keys": 0}, r"`num_keys` must be a positive integer; received 0"),
        ({"num_keys": 8, "key_dim": 5}, r"`key_dim` must be even \(two halves\); received 5"),
        ({"num_keys": 4, "top_k": 5}, r"`top_k` must be at most `num_keys`; received top_k=5, num_keys=4"),
        ({"num_keys": 8, "value_dim": 0}, r"`value_dim` must be a positive integer or None; received 0"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ProductKeyMemory(**kwargs)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"`inputs` must have rank 2 or 3; received `inputs` of rank 4"):
        ProductKeyMemory(8, top_k=2, key_dim=4)(np.ones((2, 3, 4, 5), "float32"))
