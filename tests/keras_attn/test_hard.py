import functools

import keras
import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import input_gradient, run_layer_contract, to_numpy


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


def _largest_first_feature_task(rng, n, t, d):
    """Inputs `[query, keys, values]` and the value whose key has the largest first feature."""
    keys = rng.normal(size=(n, t, d)).astype("float32")
    values = rng.normal(size=(n, t, 3)).astype("float32")
    target = values[np.arange(n), keys[:, :, 0].argmax(1)]
    return [np.ones((n, d), "float32"), keys, values], target


def test_model_fit_learns_to_pick_the_right_position():
    """Straight-through training: pick the value whose key has the largest first feature."""
    rng = np.random.default_rng(0)
    n, t, d = 4096, 6, 4
    task = functools.partial(_largest_first_feature_task, rng, t=t, d=d)

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


# REINFORCE: the estimator of Xu et al. 2015 (section 4.1), with `PolicyGradient`.



def test_reinforce_contract(rng):
    run_layer_contract(
        keras_attn.HardAttention, {"score": "general", "estimator": "reinforce"},
        _inputs(rng), [(2, 3, 6), (2, 3, 5), (2,)],
        call_kwargs={"return_attention_scores": True, "return_log_prob": True},
        expect_trainable_weights=1,
        fit=False,  # the context carries no gradient to W by design: tested below
    )


@pytest.mark.parametrize("training", [True, False])
def test_log_prob_is_the_log_of_the_soft_weights_at_the_choices(rng, training):
    inputs = _inputs(rng, b=3, tq=4)
    mask = np.ones((3, 5), bool)
    mask[1] = False  # every key masked: no choice, log-probability 0
    mask[2, :2] = False
    hard = keras_attn.HardAttention(score="general", estimator="reinforce", seed=2)
    _, choice, log_prob = hard(**inputs, mask=mask, return_attention_scores=True,
                               return_log_prob=True, training=training)
    soft = keras_attn.Attention(score="general")
    soft(**inputs)
    soft.set_weights(hard.get_weights())
    _, alpha = soft(**inputs, mask=mask, return_attention_scores=True)
    choice, alpha = to_numpy(choice), to_numpy(alpha).astype("float64")
    chosen = np.where(choice > 0, np.log(np.where(choice > 0, alpha, 1.0)), 0.0)
    np.testing.assert_allclose(to_numpy(log_prob), chosen.sum((1, 2)), rtol=1e-5, atol=1e-5)
    assert to_numpy(log_prob)[1] == 0.0


def test_reinforce_scores_learn_through_the_log_prob_only(rng):
    inputs = _inputs(rng)
    symbolic = {k: keras.Input(v.shape[1:]) for k, v in inputs.items()}
    hard = keras_attn.HardAttention(score="general", estimator="reinforce", seed=0)
    context, log_prob = hard(**symbolic, return_log_prob=True)
    from tests.keras_attn.contract import trainable_gradients

    (from_context,) = trainable_gradients(
        keras.Model(symbolic, [context, log_prob]), inputs, np.zeros((2, 3, 6), "float32"))
    (from_log_prob,) = trainable_gradients(
        keras.Model(symbolic, [log_prob, context]), inputs, np.zeros((2,), "float32"))
    assert from_context is None or np.all(from_context == 0)
    assert np.all(np.isfinite(from_log_prob)) and np.any(from_log_prob != 0)


def test_entropy_bonus_is_the_layers_own_loss(rng):
    inputs = _inputs(rng)
    hard = keras_attn.HardAttention(score="general", estimator="reinforce",
                                    entropy_weight=0.2, seed=0)
    hard(**inputs, training=True)
    (bonus,) = [float(to_numpy(x)) for x in hard.losses]
    soft = keras_attn.Attention(score="general")
    soft(**inputs)
    soft.set_weights(hard.get_weights())
    _, alpha = soft(**inputs, return_attention_scores=True)
    alpha = to_numpy(alpha).astype("float64")
    entropy = -(alpha * np.log(alpha)).sum(-1).mean()
    np.testing.assert_allclose(bonus, -0.2 * entropy, rtol=1e-5)
    hard(**inputs, training=False)
    assert not hard.losses  # no bonus outside training


def _identity_loss(y_true, y_pred):
    return y_pred  # the predictions are the per-example losses themselves


def test_baseline_is_the_bias_corrected_moving_average_of_past_batches():
    policy = keras_attn.PolicyGradient(_identity_loss, baseline_decay=0.9)
    log_prob = np.zeros((2,), "float32")
    assert float(to_numpy(policy.current_baseline())) == 0.0
    policy(np.zeros(2), np.array([1.0, 3.0], "float32"), log_prob, training=True)
    np.testing.assert_allclose(to_numpy(policy.current_baseline()), 2.0, rtol=1e-6)
    policy(np.zeros(2), np.array([4.0, 4.0], "float32"), log_prob, training=True)
    expected = (0.9 * 0.1 * 2.0 + 0.1 * 4.0) / (1 - 0.9**2)
    np.testing.assert_allclose(to_numpy(policy.current_baseline()), expected, rtol=1e-6)
    policy(np.zeros(2), np.array([9.0, 9.0], "float32"), log_prob, training=False)
    np.testing.assert_allclose(to_numpy(policy.current_baseline()), expected, rtol=1e-6)


@pytest.mark.parametrize("baseline", ["moving_average", None])
def test_surrogate_is_zero_in_value_and_reinforce_in_gradient(baseline):
    policy = keras_attn.PolicyGradient(_identity_loss, baseline=baseline)
    losses = np.array([1.0, 3.0, 0.5], "float32")
    weights = np.array([1.0, 0.0, 2.0], "float32")
    # One training step sets the baseline to that batch's weighted mean loss.
    policy(np.zeros(3), losses, np.zeros(3, "float32"), sample_weight=weights, training=True)
    b = (1.0 * 1.0 + 2.0 * 0.5) / 3.0 if baseline else 0.0
    log_prob = np.array([-0.5, -1.0, -2.0], "float32")

    def total_loss(lp):
        policy(np.zeros(3), losses, lp, sample_weight=weights)
        return keras.ops.sum(keras.ops.stack(policy.losses))

    value = float(to_numpy(total_loss(keras.ops.convert_to_tensor(log_prob))))
    np.testing.assert_allclose(value, (weights * losses).sum() / weights.sum(), rtol=1e-6)
    gradient = input_gradient(total_loss, log_prob)
    np.testing.assert_allclose(gradient, weights * (losses - b) / weights.sum(), rtol=1e-5,
                               atol=1e-7)


def test_reinforce_model_fit_learns_to_point_and_reports_the_task_loss():
    """The straight-through test's task (pick the value whose key has the largest
    first feature), learned by REINFORCE alone, for several initialisations."""
    rng = np.random.default_rng(0)
    n, t, d = 4096, 6, 4
    task = functools.partial(_largest_first_feature_task, rng, t=t, d=d)

    test_inputs, test_target = task(1000)
    train_inputs, train_target = task(n)
    for seed in (0, 1):
        keras.utils.set_random_seed(seed)
        query, key, value = keras.Input((d,)), keras.Input((t, d)), keras.Input((t, 3))
        targets = keras.Input((3,))
        hard = keras_attn.HardAttention(score="general", estimator="reinforce", seed=seed)
        context, log_prob = hard(query, value, key=key, return_log_prob=True)
        outputs = keras_attn.PolicyGradient("mse")(targets, context, log_prob)
        model = keras.Model([query, key, value, targets], outputs)
        model.compile(keras.optimizers.Adam(0.05))
        inference = keras.Model([query, key, value], context)

        def accuracy(inference):
            predicted = inference.predict(test_inputs, verbose=0)
            return np.mean(np.all(np.abs(predicted - test_target) < 1e-6, axis=-1))

        before = accuracy(inference)
        model.fit([*train_inputs, train_target], epochs=8, batch_size=128, verbose=0)
        after = accuracy(inference)
        assert before < 0.5 and after >= 0.9, (seed, before, after)
        # Evaluation takes the argmax: the reported loss is the task's loss alone.
        reported = model.evaluate([*test_inputs, test_target], verbose=0)
        predicted = inference.predict(test_inputs, verbose=0)
        np.testing.assert_allclose(reported, np.mean((predicted - test_target) ** 2),
                                   rtol=1e-4)


def test_policy_gradient_round_trips_and_refuses_bad_arguments():
    policy = keras_attn.PolicyGradient("sparse_categorical_crossentropy", baseline_decay=0.8)
    clone = keras_attn.PolicyGradient.from_config(policy.get_config())
    assert clone.get_config() == policy.get_config()
    with pytest.raises(ValueError, match=r"`baseline` must be one of .*received 'ema'"):
        keras_attn.PolicyGradient("mse", baseline="ema")
    with pytest.raises(ValueError, match=r"`baseline_decay` must be a number in \[0, 1\)"):
        keras_attn.PolicyGradient("mse", baseline_decay=1.0)
    with pytest.raises(ValueError, match=r"`log_prob` must be `\(B,\)`.*\(2, 3\)"):
        keras_attn.PolicyGradient("mse")(np.zeros((2, 1)), np.zeros((2, 1)),
                                         np.zeros((2, 3), "float32"))
    with pytest.raises(ValueError, match=r"`estimator` must be one of .*received 'score'"):
        keras_attn.HardAttention(estimator="score")
    with pytest.raises(ValueError, match=r"`entropy_weight` must be a number ≥ 0"):
        keras_attn.HardAttention(entropy_weight=-0.1)


def test_policy_gradient_contract(rng):
    inputs = {"targets": rng.integers(0, 3, (4,)).astype("int32"),
              "predictions": rng.normal(size=(4, 3)).astype("float32"),
              "log_prob": rng.normal(size=(4,)).astype("float32")}
    run_layer_contract(
        keras_attn.PolicyGradient,
        {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
        inputs, [(4, 3)], expect_trainable_weights=0,
        fit=False,  # it has no trainable weight: the fit above trains through it
    )
