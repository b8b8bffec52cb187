import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import run_layer_contract, to_numpy


def _inputs(rng):
    return {
        "query": rng.normal(size=(2, 3, 8)).astype("float32"),
        "value": rng.normal(size=(2, 6, 8)).astype("float32"),
    }


@pytest.mark.parametrize(
    "kwargs, n_weights",
    [
        ({"score": "dot"}, 0),
        ({"score": "dot", "scale": True}, 1),
        ({"score": "general"}, 1),
        ({"score": "general", "scale": True}, 2),
        ({"score": "concat", "units": 5}, 3),
    ],
)
def test_contract(rng, kwargs, n_weights):
    run_layer_contract(
        keras_attn.LuongAttention, kwargs, _inputs(rng), [(2, 3, 8), (2, 3, 6)],
        call_kwargs={"return_attention_scores": True},
        expect_trainable_weights=n_weights,
    )


def test_scale_multiplies_the_scores(rng):
    inputs = _inputs(rng)
    layer = keras_attn.LuongAttention(score="general", scale=True)
    _, base = layer(**inputs, return_attention_scores=True)
    layer.scale.assign(0.0)  # g = 0: uniform weights
    _, flat = layer(**inputs, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(flat), 1 / 6, rtol=1e-6)
    assert not np.allclose(to_numpy(base), 1 / 6)


def test_unknown_score_is_rejected():
    with pytest.raises(ValueError, match=r"`score` must be one of \('dot', 'general', 'concat'\)"):
        keras_attn.LuongAttention(score="additive")


def test_precomputed_keys_must_match_the_score(rng):
    inputs = _inputs(rng)
    inputs["value"] = inputs["value"][..., :5]  # W k maps the 5 key features to the query's 8
    general = keras_attn.LuongAttention(score="general")
    general(**inputs)
    keys = general.precompute_keys(inputs["value"])
    np.testing.assert_allclose(
        to_numpy(general(**inputs, precomputed_keys=keys)), to_numpy(general(**inputs)), atol=1e-6
    )
    with pytest.raises(ValueError, match=r"`precomputed_keys` must have shape \(2, 6, 8\)"):
        general(**inputs, precomputed_keys=inputs["value"])


@pytest.mark.parametrize("score", ["dot", "general"])
def test_units_without_a_hidden_layer_are_refused(score):
    # TF-Addons' LuongAttention(units) is the general score; here `units` sizes only
    # the concat score's hidden layer, so elsewhere it would be silently unused.
    with pytest.raises(ValueError, match=rf"`units` is the hidden size of the `concat` score; "
                                         rf"the '{score}' score has none \(received units=10\)"):
        keras_attn.LuongAttention(score=score, units=10)


def test_use_scale_is_refused_with_the_name_to_use():
    with pytest.raises(ValueError, match=r"learned scale is `scale=`.*received use_scale=True"):
        keras_attn.LuongAttention(score="general", use_scale=True)


def test_a_config_saved_with_unused_units_still_loads():
    config = keras_attn.LuongAttention(score="general", scale=True).get_config()
    layer = keras_attn.LuongAttention.from_config({**config, "units": 128})
    assert layer.units is None and layer.use_scale and layer.score_name == "general"
