"""Hard (stochastic) attention: the context is the value at one chosen position."""

import keras
from keras import ops

from keras_attn import _validation
from keras_attn import ops as attn_ops
from keras_attn.attention import Attention

ESTIMATORS = ("gumbel", "reinforce")


@keras.saving.register_keras_serializable(package="keras_attn")
class HardAttention(Attention):
    """Hard (stochastic) attention of Xu et al. 2015, trained by REINFORCE or Gumbel.

    "Show, Attend and Tell: Neural Image Caption Generation with Visual
    Attention", section 4.1. Soft attention's weights `α = softmax(s(q, k_j))`
    become the parameters of a categorical distribution over the positions; hard
    attention picks *one* position `ĵ ~ Multinoulli(α)` and the context is the
    value there, `c = v_ĵ` (soft attention's `c = Σ_j α_j v_j` is its expectation).

    The sample is not differentiable, so the scores learn by one of two estimators
    of `∇ E[L]`:

    - `estimator="reinforce"`, the paper's (and the chapter's: hard attention is
      trained by reinforcement learning): the score-function estimator
      `∇ E[L] = E[(L − b) ∇ log α_ĵ]` (Williams 1992), with a baseline `b` and an
      entropy bonus `λ_H H(α)`. The context carries no gradient to the scores; the
      layer returns `log α_ĵ` (`return_log_prob=True`) and
      `keras_attn.PolicyGradient` turns it and the task loss into the surrogate
      loss, so the model trains with `model.fit`. The entropy bonus is the layer's
      own loss (`entropy_weight`).
    - `estimator="gumbel"` (the default): the straight-through Gumbel-softmax
      (Jang, Gu & Poole 2017; Maddison, Mnih & Teh 2017), a later relaxation: the
      sample is drawn by the Gumbel-max trick, `ĵ = argmax_j (s_j + g_j)`,
      `g_j = −log(−log u_j)`, and the gradient flows through the relaxed weights
      `softmax((s + g) / τ)`. No extra loss is needed.

    Forward, the weights are exactly one-hot under both. At inference the layer
    takes the most likely position, `argmax_j s_j` (or keeps sampling with
    `sample_at_inference=True`).

    Masks are those of `Attention`: a masked key is never chosen, and a query
    whose keys are all masked gets zero weights, a zero context and `log_prob` 0.

    Args:
        score: a score name or `AttentionScore` layer, as `Attention`.
        use_scale: multiply the scores by a learned scalar.
        estimator: `"gumbel"` or `"reinforce"`, the gradient estimator in training.
        temperature: `τ > 0` of the Gumbel relaxation; lower is closer to the
            hard choice and noisier.
        entropy_weight: `λ_H ≥ 0`; in training the layer adds `−λ_H · mean H(α)`
            to its losses, which keeps the policy from collapsing early.
        sample_at_inference: sample outside training too, instead of the argmax.
        seed: seed of the sampling noise.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments: as `keras_attn.Attention`, plus
        return_log_prob: also return `log α_ĵ` summed over the queries, `(B,)`:
            the log-probability of the choices, for `PolicyGradient`.

    Returns:
        The context as `keras_attn.Attention`; with `return_attention_scores=True`
        also the one-hot choices `(B, Tq, Tk)` (or `(B, Tk)`); with
        `return_log_prob=True` the log-probability `(B,)` last.

    Example:

    >>> query = np.random.rand(2, 3, 8).astype("float32")
    >>> memory = np.random.rand(2, 5, 8).astype("float32")
    >>> hard = keras_attn.HardAttention(score="general")
    >>> context, choice = hard(query, memory, return_attention_scores=True)
    >>> ops.convert_to_numpy(choice).sum(-1).tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    >>> policy = keras_attn.HardAttention(score="general", estimator="reinforce")
    >>> context, log_prob = policy(query, memory, return_log_prob=True, training=True)
    >>> tuple(log_prob.shape)
    (2,)
    """

    def __init__(
        self,
        score="dot",
        use_scale=False,
        estimator="gumbel",
        temperature=1.0,
        entropy_weight=0.0,
        sample_at_inference=False,
        seed=None,
        **kwargs,
    ):
        if kwargs.pop("dropout", 0.0):
            raise ValueError("`dropout` does not apply to hard attention's one-hot weights.")
        super().__init__(score=score, use_scale=use_scale, seed=seed, **kwargs)
        if estimator not in ESTIMATORS:
            raise ValueError(f"`estimator` must be one of {ESTIMATORS}; received {estimator!r}.")
        self.estimator = estimator
        self.temperature = _validation.check_number("temperature", temperature)
        self.entropy_weight = _validation.check_number(
            "entropy_weight", entropy_weight, low_inclusive=True)
        self.sample_at_inference = bool(sample_at_inference)
        self.seed_generator = keras.random.SeedGenerator(seed)
        self._policy = None

    def call(
        self,
        query,
        value,
        key=None,
        mask=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_bias=None,
        use_causal_mask=False,
        return_attention_scores=False,
        precomputed_keys=None,
        return_log_prob=False,
        training=None,
    ):
        # `_attention_weights` leaves the policy's log-probability and entropy here:
        # `Attention.call` returns the weights only, and both come from the same
        # scores and mask inside this one call.
        self._policy = None
        outputs = super().call(
            query, value, key=key, mask=mask, query_mask=query_mask, value_mask=value_mask,
            key_mask=key_mask, attention_bias=attention_bias, use_causal_mask=use_causal_mask,
            return_attention_scores=return_attention_scores,
            precomputed_keys=precomputed_keys, training=training,
        )
        log_prob, entropy = self._policy
        self._policy = None
        if training and self.entropy_weight:
            self.add_loss(-self.entropy_weight * ops.mean(entropy))
        if not return_log_prob:
            return outputs
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        return (*outputs, log_prob)

    def _attention_weights(self, scores, training=None, **masks):
        scores, mask = attn_ops.biased_scores_and_mask(scores, **masks)
        dtype = scores.dtype
        logits = ops.cast(scores, "float32")
        sampling = bool(training) or self.sample_at_inference
        noisy = logits
        if sampling:
            # u ∈ [tiny, 1): −log(−log u) stays finite.
            uniform = keras.random.uniform(
                ops.shape(logits), minval=1e-20, maxval=1.0, seed=self.seed_generator
            )
            noisy = logits - ops.log(-ops.log(uniform))
        fill = ops.cast(attn_ops.mask_fill_value("float32"), "float32")
        choosable = noisy if mask is None else ops.where(mask, noisy, fill)
        choice = ops.one_hot(ops.argmax(choosable, axis=-1), ops.shape(logits)[-1])
        if mask is not None:
            choice = ops.where(mask, choice, ops.zeros_like(choice))  # all-masked rows: 0
        log_alpha = attn_ops.masked_log_softmax(logits, mask)
        alpha = attn_ops.masked_softmax(logits, mask)
        # Per query, summed over the queries (and heads) of each example.
        per_example = tuple(range(1, len(logits.shape)))
        log_prob = ops.sum(ops.stop_gradient(choice) * log_alpha, axis=per_example)
        entropy = -ops.sum(ops.where(alpha > 0, alpha * log_alpha, 0.0), axis=-1)
        self._policy = (ops.cast(log_prob, dtype), entropy)
        if not training or self.estimator == "reinforce":
            return ops.cast(ops.stop_gradient(choice), dtype)
        relaxed = attn_ops.masked_softmax(noisy / self.temperature, mask)
        # Forward exactly the one-hot choice (x − x is exactly 0), backward the
        # relaxed weights' gradient.
        return ops.cast(choice + (relaxed - ops.stop_gradient(relaxed)), dtype)

    def get_config(self):
        config = super().get_config()
        config.pop("dropout")
        config.update(
            estimator=self.estimator,
            temperature=self.temperature,
            entropy_weight=self.entropy_weight,
            sample_at_inference=self.sample_at_inference,
        )
        return config
