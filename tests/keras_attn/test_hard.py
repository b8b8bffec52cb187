import keras
import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import run_layer_contract, to_numpy


def _inputs(rng, b=2, tq=3, tk=5, d=4, dv=6):
    return {
        "query": rng.normal(size=(b, tq, d)).astype("float32"),
        "value": rng.normal(size=(b, tk, dv)).astype("float32"),
        "key": rng.normal(size=(b, tk, d)).astype("float32"),
    }


@pytest.mark.parametrize(
    "kwargs, n_weights",
    [
        ({"score": "dot", "use_scale": True}, 1),
        ({"score": "general", "temperature": 0.5}, 1),
        ({"score": "additive"}, 4),
    ],
)
def test_contract(rng, kwargs, n_weights):
    run_layer_contract(
        keras_attn.HardAttention, kwargs, _inputs(rng), [(2, 3, 6), (2, 3, 5)],
        call_kwargs={"return_attention_scores": True},
        expect_trainable_weights=n_weights,
    )


@pytest.mark.parametrize("score", ["dot", "general", "additive"])
def test_inference_takes_the_value_at_the_most_likely_position(rng, score):
    inputs = _inputs(rng)
    hard = keras_attn.HardAttention(score=score)
    context, choice = hard(**inputs, return_attention_scores=True)
    soft = keras_attn.Attention(score=score)
    soft(**inputs)
    soft.set_weights(hard.get_weights())
    _, alpha = soft(**inputs, return_attention_scores=True)
    best = to_numpy(alpha).argmax(-1)
    np.testing.assert_array_equal(to_numpy(choice), np.eye(5)[best])
    chosen = np.take_along_axis(inputs["value"], best[..., None], axis=1)
    np.testing.assert_array_equal(to_numpy(context), chosen)


def test_samples_follow_the_soft_weights(rng):
    """ĵ ~ Multinoulli(α): 20,000 draws match α within 5 binomial standard errors."""
    draws = 20_000
    query = np.repeat(rng.normal(size=(1, 1, 4)), draws, axis=0).astype("float32")
    key = np.repeat(rng.normal(size=(1, 5, 4)), draws, axis=0).astype("float32")
    value = np.eye(5, dtype="float32")[None].repeat(draws, axis=0)
    hard = keras_attn.HardAttention(score="dot", sample_at_inference=True, seed=3)
    context = to_numpy(hard(query, value, key=key))
    frequencies = context[:, 0].mean(0)
    logits = (key[0] @ query[0, 0]).astype("float64")
    alpha = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    tolerance = 5 * np.sqrt(alpha * (1 - alpha) / draws) + 1e-3
    assert np.all(np.abs(frequencies - alpha) <= tolerance), (frequencies, alpha)
    # Each draw is one position, not a blend.
    assert np.all(np.isin(context, [0.0, 1.0])) and np.all(context.sum(-1) == 1)


def test_training_weights_are_one_hot_and_carry_a_gradient(rng):
    inputs = {k: keras.ops.convert_to_tensor(v) for k, v in _inputs(rng).items()}
    hard = keras_attn.HardAttention(score="general", seed=0)
    context, choice = hard(**inputs, return_attention_scores=True, training=True)
    choice = to_numpy(choice)
    assert set(np.unique(choice)) == {0.0, 1.0} and np.all(choice.sum(-1) == 1)
    chosen = np.einsum("bqk,bkd->bqd", choice, to_numpy(inputs["value"]))
    np.testing.assert_array_equal(to_numpy(context), chosen)


def test_masked_keys_are_never_chosen_and_empty_rows_are_zero(rng):
    inputs = _inputs(rng, b=3, tq=4)
    mask = np.array([[1, 0, 1, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 1]], bool)
    hard = keras_attn.HardAttention(score="dot", sample_at_inference=True, seed=1)
    for _ in range(20):
        context, choice = hard(**inputs, mask=mask, return_attention_scores=True, training=True)
        choice, context = to_numpy(choice), to_numpy(context)
        assert np.all(choice[~np.broadcast_to(mask[:, None], choice.shape)] == 0)
        np.testing.assert_array_equal(choice[1], 0.0)
        np.testing.assert_array_equal(context[1], 0.0)
        np.testing.assert_array_equal(choice[2, :, 4], 1.0)


def test_model_fit_learns_to_pick_the_right_position():
    """Straight-through training: pick the value whose key has the largest first feature."""
    rng = np.random.default_rng(0)
    n, t, d = 4096, 6, 4

    def task(n):
        keys = rng.normal(size=(n, t, d)).astype("float32")
        values = rng.normal(size=(n, t, 3)).astype("float32")
        target = values[np.arange(n), keys[:, :, 0].argmax(1)]
        return [np.ones((n, d), "float32"), keys, values], target

    query, key, value = keras.Input((d,)), keras.Input((t, d)), keras.Input((t, 3))
    hard = keras_attn.HardAttention(score="general", temperature=0.5, seed=0)
    model = keras.Model([query, key, value], hard(query, value, key=key))
    model.compile(keras.optimizers.Adam(0.05), "mse")
    test_inputs, test_target = task(1000)

    def accuracy():
        predicted = model.predict(test_inputs, verbose=0)
        return np.mean(np.all(np.abs(predicted - test_target) < 1e-6, axis=-1))

    before = accuracy()
    model.fit(*task(n), epochs=10, batch_size=128, verbose=0)
    after = accuracy()
    assert before < 0.5 and after >= 0.9, (before, after)


def test_config_round_trip_keeps_the_new_arguments():
    hard = keras_attn.HardAttention(score="general", temperature=0.3, sample_at_inference=True, seed=7)
    config = hard.get_config()
    assert config["temperature"] == 0.3 and config["sample_at_inference"] is True
    assert "dropout" not in config
    assert keras_attn.HardAttention.from_config(config).get_config() == config


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"temperature": 0.0}, r"`temperature` must be a number > 0; received 0.0"),
        ({"temperature": -1}, r"`temperature` must be a number > 0; received -1"),
        ({"temperature": float("nan")}, r"`temperature` must be a number > 0; received nan"),
        ({"dropout": 0.1}, r"`dropout` does not apply to hard attention"),
        ({"score": "nope"}, r"nope"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        keras_attn.HardAttention(**kwargs)
