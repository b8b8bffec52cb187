"""Hard (stochastic) attention: the context is the value at one chosen position."""

import keras
from keras import ops

from keras_attn import _validation
from keras_attn import ops as attn_ops
from keras_attn.attention import Attention


@keras.saving.register_keras_serializable(package="keras_attn")
class HardAttention(Attention):
    """Hard attention of Xu et al. 2015, trained with a straight-through Gumbel-softmax.

    "Show, Attend and Tell: Neural Image Caption Generation with Visual
    Attention", section 4.1. Soft attention's weights `α = softmax(s(q, k_j))`
    become the parameters of a categorical distribution over the positions; hard
    attention picks *one* position `ĵ ~ Multinoulli(α)` and the context is the
    value there, `c = v_ĵ` (soft attention's `c = Σ_j α_j v_j` is its expectation).

    The sample is not differentiable. In training the layer draws it with the
    Gumbel-max trick, `ĵ = argmax_j (s_j + g_j)`, `g_j = −log(−log u_j)`, and
    back-propagates through the relaxed weights `softmax((s + g) / τ)` instead
    (straight-through Gumbel-softmax: Jang, Gu & Poole 2017; Maddison, Mnih & Teh
    2017), so it trains with `model.fit` and no REINFORCE loss. Forward, the
    weights are exactly one-hot. At inference it takes the most likely position,
    `argmax_j s_j` (or keeps sampling with `sample_at_inference=True`).

    Masks are those of `Attention`: a masked key is never chosen, and a query
    whose keys are all masked gets zero weights and a zero context.

    Args:
        score: a score name or `AttentionScore` layer, as `Attention`.
        use_scale: multiply the scores by a learned scalar.
        temperature: `τ > 0` of the relaxation that carries the gradient; lower is
            closer to the hard choice and noisier.
        sample_at_inference: sample outside training too, instead of the argmax.
        seed: seed of the Gumbel noise.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments and returns: as `keras_attn.Attention`; the returned weights
    are the one-hot choices `(B, Tq, Tk)` (or `(B, Tk)`).

    Example:

    >>> query = np.random.rand(2, 3, 8).astype("float32")
    >>> memory = np.random.rand(2, 5, 8).astype("float32")
    >>> hard = keras_attn.HardAttention(score="general")
    >>> context, choice = hard(query, memory, return_attention_scores=True)
    >>> ops.convert_to_numpy(choice).sum(-1).tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """

    def __init__(
        self,
        score="dot",
        use_scale=False,
        temperature=1.0,
        sample_at_inference=False,
        seed=None,
        **kwargs,
    ):
        if kwargs.pop("dropout", 0.0):
            raise ValueError("`dropout` does not apply to hard attention's one-hot weights.")
        super().__init__(score=score, use_scale=use_scale, seed=seed, **kwargs)
        self.temperature = _validation.check_number("temperature", temperature)
        self.sample_at_inference = bool(sample_at_inference)
        self.seed_generator = keras.random.SeedGenerator(seed)

    def _attention_weights(self, scores, training=None, **masks):
        scores, mask = attn_ops.biased_scores_and_mask(scores, **masks)
        dtype = scores.dtype
        logits = ops.cast(scores, "float32")
        sampling = bool(training) or self.sample_at_inference
        if sampling:
            # u ∈ [tiny, 1): −log(−log u) stays finite.
            uniform = keras.random.uniform(
                ops.shape(logits), minval=1e-20, maxval=1.0, seed=self.seed_generator
            )
            logits = logits - ops.log(-ops.log(uniform))
        fill = ops.cast(attn_ops.mask_fill_value("float32"), "float32")
        choosable = logits if mask is None else ops.where(mask, logits, fill)
        choice = ops.one_hot(ops.argmax(choosable, axis=-1), ops.shape(logits)[-1])
        if mask is not None:
            choice = ops.where(mask, choice, ops.zeros_like(choice))  # all-masked rows: 0
        if not training:
            return ops.cast(choice, dtype)
        relaxed = attn_ops.masked_softmax(logits / self.temperature, mask)
        # Forward exactly the one-hot choice (x − x is exactly 0), backward the
        # relaxed weights' gradient.
        return ops.cast(choice + (relaxed - ops.stop_gradient(relaxed)), dtype)

    def get_config(self):
        config = super().get_config()
        config.pop("dropout")
        config.update(temperature=self.temperature, sample_at_inference=self.sample_at_inference)
        return config
