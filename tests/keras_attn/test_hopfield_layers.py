import keras
import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import run_layer_contract, to_numpy


def _patterns(rng, b=2, tq=3, tk=5, d=8):
    return (rng.normal(size=(b, tq, d)).astype("float32"),
            rng.normal(size=(b, tk, d)).astype("float32"))


def test_one_update_is_keras_multi_head_attention(rng):
    # Ramsauer et al. §3: without normalisation or extra updates, β = 1/√d_k,
    # the Hopfield layer is multi-head attention (query R, key Y, value P).
    state, stored = _patterns(rng)
    projection = rng.normal(size=(2, 5, 6)).astype("float32")
    hopfield = keras_attn.Hopfield(
        num_heads=2, key_dim=4, normalize_stored_pattern=False, normalize_state_pattern=False,
        normalize_pattern_projection=False,
    )
    keras_mha = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    want, want_weights = keras_mha(state, projection, key=stored, return_attention_scores=True)
    hopfield(state, stored, projection)
    by_name = {w.path.split("/")[-2] + "/" + w.path.split("/")[-1]: w for w in hopfield.weights}
    for dense in ("query", "key", "value"):
        source = getattr(keras_mha, f"_{dense}_dense")
        by_name[f"{dense}/kernel"].assign(source.kernel)
        by_name[f"{dense}/bias"].assign(source.bias)
    by_name["output/kernel"].assign(keras_mha._output_dense.kernel)
    by_name["output/bias"].assign(keras_mha._output_dense.bias)
    got, weights = hopfield(state, stored, projection, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-5)
    np.testing.assert_allclose(to_numpy(weights), to_numpy(want_weights), atol=1e-6)


def test_updates_retrieve_a_stored_pattern_and_stop_when_converged(rng):
    stored = np.eye(6, dtype="float32")[None] * 4.0  # well-separated patterns
    state = stored[:, :2] + 0.5 * rng.normal(size=(1, 2, 6)).astype("float32")
    layer = keras_attn.Hopfield(use_projections=False, scaling=4.0, update_steps_max=5,
                                normalize_stored_pattern=False, normalize_state_pattern=False,
                                normalize_pattern_projection=False, use_output_projection=False)
    retrieved, weights = layer(state, stored, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(retrieved)[0], stored[0, :2], atol=1e-3)
    assert to_numpy(weights)[0, 0, 0].argmax() == 0 and to_numpy(weights)[0, 0, 1].argmax() == 1


def test_masks_keep_states_off_masked_patterns(rng):
    state, stored = _patterns(rng)
    stored_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    association = np.ones((2, 3, 5), bool)
    association[1, 0, :2] = False
    layer = keras_attn.Hopfield(num_heads=2, key_dim=4, update_steps_max=2)
    _, weights = layer(state, stored, stored_mask=stored_mask, association_mask=association,
                       return_attention_scores=True)
    weights = to_numpy(weights)
    assert np.all(weights[0, :, :, 3:] == 0) and np.all(weights[1, :, 0, :2] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("kwargs, n_weights", [
    ({"num_heads": 2, "key_dim": 4}, 14),
    ({"num_heads": 1, "key_dim": 4, "update_steps_max": 3, "normalize_state_pattern": False,
      "use_bias": False}, 8),
])
def test_hopfield_contract(kwargs, n_weights, rng):
    state, stored = _patterns(rng)
    mask = np.ones((2, 5), bool)
    mask[1, 3:] = False
    run_layer_contract(
        keras_attn.Hopfield, kwargs,
        {"state_pattern": state, "stored_pattern": stored, "stored_mask": mask},
        [(2, 3, 8), (2, kwargs["num_heads"], 3, 5)],
        call_kwargs={"return_attention_scores": True}, expect_trainable_weights=n_weights,
    )


def test_pooling_contract(rng):
    bags = rng.normal(size=(2, 6, 8)).astype("float32")
    mask = np.ones((2, 6), bool)
    mask[0, 4:] = False
    run_layer_contract(
        keras_attn.HopfieldPooling, {"quantity": 2, "num_heads": 2, "key_dim": 4},
        {"inputs": bags, "mask": mask}, (2, 2, 8), expect_trainable_weights=15,
    )


def test_lookup_contract(rng):
    run_layer_contract(
        keras_attn.HopfieldLayer, {"quantity": 10, "num_heads": 2, "key_dim": 4},
        {"inputs": rng.normal(size=(2, 3, 8)).astype("float32")}, (2, 3, 8),
        expect_trainable_weights=16,
    )


@pytest.mark.parametrize("kwargs, message", [
    ({"num_heads": 2}, r"`key_dim` must be set when `use_projections=True`"),
    ({"use_projections": False, "num_heads": 2}, r"`num_heads` must be 1 without projections"),
    ({"key_dim": 4, "update_steps_max": -1}, r"`update_steps_max` must be an integer"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        keras_attn.Hopfield(**kwargs)
