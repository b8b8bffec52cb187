import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import (
    assert_ignores_masked_steps,
    run_layer_contract,
    to_numpy,
)


def _steps(rng, b=3, t=6, d=5):
    return rng.normal(size=(b, t, d)).astype("float32")


@pytest.mark.parametrize("units, n_weights", [(None, 3), (4, 3)])
def test_contract(rng, units, n_weights):
    run_layer_contract(
        keras_attn.AttentionPooling, {"units": units}, {"inputs": _steps(rng)},
        [(3, 5), (3, 6)], call_kwargs={"return_attention_scores": True},
        expect_trainable_weights=n_weights,
    )


def test_contract_with_mask(rng):
    mask = np.array([[1, 1, 1, 0, 0, 0], [1] * 6, [1, 0, 0, 0, 0, 0]], bool)
    run_layer_contract(
        keras_attn.AttentionPooling, {"units": 4}, {"inputs": _steps(rng), "mask": mask},
        [(3, 5), (3, 6)], call_kwargs={"return_attention_scores": True},
    )


def test_follows_yang_et_al_eqs_5_to_7(rng):
    steps = _steps(rng)
    pooling = keras_attn.AttentionPooling(units=4)
    pooled, weights = pooling(steps, return_attention_scores=True)
    w = to_numpy(pooling.projection.kernel)
    b = to_numpy(pooling.projection.bias)
    u_w = to_numpy(pooling.context_vector)[:, 0]
    scores = np.tanh(steps @ w + b) @ u_w
    alpha = np.exp(scores - scores.max(-1, keepdims=True))
    alpha /= alpha.sum(-1, keepdims=True)
    np.testing.assert_allclose(to_numpy(weights), alpha, atol=1e-6)
    np.testing.assert_allclose(to_numpy(pooled), np.einsum("bt,btd->bd", alpha, steps), atol=1e-5)


def test_masked_steps_are_ignored_and_empty_sequences_pool_to_zero(rng):
    steps = _steps(rng)
    mask = np.array([[1, 1, 0, 0, 1, 0], [0] * 6, [1] * 6], bool)
    pooling = keras_attn.AttentionPooling()
    assert_ignores_masked_steps(
        lambda x: pooling(x["inputs"], mask=mask, return_attention_scores=True),
        {"inputs": steps}, "inputs", mask,
    )
    pooled, weights = pooling(steps, mask=mask, return_attention_scores=True)
    np.testing.assert_array_equal(to_numpy(pooled)[1], 0.0)
    np.testing.assert_array_equal(to_numpy(weights)[1], 0.0)


def test_bad_input_is_named(rng):
    with pytest.raises(ValueError, match=r"`inputs` must have rank 3; received `inputs` of rank 2"):
        keras_attn.AttentionPooling()(_steps(rng)[:, 0])
    with pytest.raises(ValueError, match=r"`mask` must have shape \(3, 6\)"):
        keras_attn.AttentionPooling()(_steps(rng), mask=np.ones((3, 5), bool))
    with pytest.raises(ValueError, match=r"`units` must be a positive integer or None; received 0"):
        keras_attn.AttentionPooling(units=0)
