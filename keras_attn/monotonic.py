"""Monotonic attention (Raffel et al. 2017): alignments that only move forward."""

import keras
from keras import ops

from keras_attn import _validation
from keras_attn import ops as attn_ops
from keras_attn.attention import Attention
from keras_attn.choices import MONOTONIC_SCORES
from keras_attn.scores import AdditiveScore, BilinearScore, DotScore

MODES = ("parallel", "recursive", "hard")
_TINY = 1e-10


def _exclusive_cumprod(x):
    """`[1, x_0, x_0 x_1, …]` along the last axis, through logs so long products of
    small factors neither underflow to an exact 0 nor lose their gradient."""
    logs = ops.log(ops.clip(x, _TINY, 1.0))
    shifted = ops.concatenate([ops.zeros_like(logs[..., :1]), logs[..., :-1]], axis=-1)
    return ops.exp(ops.cumsum(shifted, axis=-1))


def monotonic_alignment(p_choose, previous_alignment, mode="parallel"):
    """The expected monotonic alignment `α_i` from `p_{i,j}` and `α_{i−1}` (eq. 9–12).

    The decoder scans the memory from where it stopped at step `i − 1` and stops
    at `j` with probability `p_{i,j}`:

        `α_{i,j} = p_{i,j} Σ_{k≤j} α_{i−1,k} Π_{l=k}^{j−1} (1 − p_{i,l})`.

    Args:
        p_choose: `(B, T)` stopping probabilities in [0, 1].
        previous_alignment: `(B, T)` alignment of the previous step (one-hot at
            0 before the first step).
        mode: `"recursive"`: the recurrence `q_j = (1 − p_{j−1}) q_{j−1} + α_{i−1,j}`,
            `α_{i,j} = p_j q_j`, solved exactly (a `T × T` triangle per step);
            `"parallel"` (TF-Addons' default): the closed form with cumulative
            products and sums, `O(T)`, which divides by `Π(1 − p)` and so loses
            precision once that product is tiny (at `p` near 1);
            `"hard"`: for binary `p` and a one-hot previous alignment, the first
            `j` at or after the previous position with `p_j = 1`.

    Returns:
        `(B, T)` alignment; it sums to at most 1 (the rest is the probability
        of stopping nowhere).
    """
    if mode not in MODES:
        raise ValueError(f"`mode` must be one of {MODES}; received {mode!r}.")
    p_choose, previous_alignment = attn_ops.as_tensors(p_choose, previous_alignment)
    if mode == "hard":
        chosen = p_choose * ops.cumsum(previous_alignment, axis=-1)
        return chosen * ops.cumprod(
            ops.concatenate([ops.ones_like(chosen[:, :1]), 1.0 - chosen[:, :-1]], axis=-1), axis=-1
        )
    if mode == "parallel":
        stay = _exclusive_cumprod(1.0 - p_choose)
        return p_choose * stay * ops.cumsum(
            previous_alignment / ops.clip(stay, _TINY, 1.0), axis=-1
        )
    # The recurrence solved exactly: q_j = Σ_{k≤j} α_{i−1,k} Π_{l=k}^{j−1} (1 − p_l),
    # the products as differences of cumulative log-sums (a (T, T) triangle, no
    # division by a vanishing product, and no loop for XLA to differentiate).
    logs = ops.log(ops.clip(1.0 - p_choose, _TINY, 1.0))
    sums = ops.cumsum(logs, axis=-1) - logs  # Σ_{l<j} log(1 − p_l)
    exponent = sums[:, None, :] - sums[:, :, None]  # [b, k, j]: Σ_{k≤l<j}
    length = ops.shape(p_choose)[-1]
    upper = ops.greater_equal(
        ops.arange(length)[None, :], ops.arange(length)[:, None]
    )[None]  # k ≤ j
    decay = ops.where(upper, ops.exp(ops.where(upper, exponent, 0.0)), 0.0)
    return p_choose * ops.einsum("bk,bkj->bj", previous_alignment, decay)


@keras.saving.register_keras_serializable(package="keras_attn")
class MonotonicAttention(Attention):
    """Monotonic attention of Raffel, Luong, Liu, Weiss & Eck 2017.

    "Online and Linear-Time Attention by Enforcing Monotonic Alignments". At
    each decoder step the attention resumes scanning the memory where it
    stopped last step and stops at `j` with probability
    `p_{i,j} = sigmoid(e_{i,j} + r + ε)`, `ε ~ N(0, σ²)` in training only
    (the noise pushes the energies towards hard decisions), `r` a learned
    score bias. Training uses the expected alignment (`monotonic_alignment`);
    with `mode="hard"` (test time) `p = [e + r > 0]` and the alignment is
    one-hot, so decoding reads each memory entry at most once: linear time,
    online.

    The energy is Bahdanau's additive score (`score="additive"`, as TF-Addons'
    `BahdanauMonotonicAttention`) or Luong's (`"dot"`, `"general"`, as
    `LuongMonotonicAttention`). Keys can be precomputed as for soft attention.

    Args:
        score: `"additive"`, `"dot"` or `"general"`.
        units: hidden size of the additive score.
        normalize: weight-normalise the additive score's `v`.
        sigmoid_noise: `σ` of the training noise before the sigmoid.
        score_bias_init: initial `r` (the paper suggests a negative value,
            e.g. −4, so early alignments do not stop at once).
        mode: `"parallel"`, `"recursive"` or `"hard"` (see
            `monotonic_alignment`).
        seed: seed of the noise.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: `(B, dq)`, one decoder step.
        value: `(B, T, dv)`.
        previous_alignment: `(B, T)`, the last step's alignment (default
            `initial_alignment`: one-hot at position 0).
        mask, key, precomputed_keys, return_attention_scores, training: as
            `keras_attn.Attention`; a masked position never stops the scan.

    Returns:
        The context `(B, dv)`, and with `return_attention_scores=True` the
        alignment `(B, T)`.

    Example:

    >>> state = np.random.rand(2, 8).astype("float32")
    >>> memory = np.random.rand(2, 6, 8).astype("float32")
    >>> attention = keras_attn.MonotonicAttention(score="additive", units=4)
    >>> context, alignment = attention(state, memory, return_attention_scores=True)
    >>> tuple(context.shape), bool(np.all(ops.convert_to_numpy(alignment).sum(-1) <= 1 + 1e-6))
    ((2, 8), True)
    """

    def __init__(
        self,
        score="additive",
        units=None,
        normalize=False,
        sigmoid_noise=0.0,
        score_bias_init=0.0,
        mode="parallel",
        seed=None,
        **kwargs,
    ):
        if kwargs.pop("use_scale", False):
            # Refused, not ignored: TF-Addons' LuongMonotonicAttention(scale=True)
            # multiplies the energy by a learned scalar g, which this layer lacks.
            raise ValueError(
                "`use_scale` does not apply to monotonic attention (TF-Addons' "
                "LuongMonotonicAttention(scale=True) has no equivalent here); received "
                "use_scale=True."
            )
        if kwargs.pop("dropout", 0.0):
            raise ValueError("`dropout` does not apply to monotonic attention's alignment.")
        if score not in MONOTONIC_SCORES:
            raise ValueError(f"`score` must be one of {MONOTONIC_SCORES}; received {score!r}.")
        if mode not in MODES:
            raise ValueError(f"`mode` must be one of {MODES}; received {mode!r}.")
        units = _validation.check_integer("units", units, allow_none=True)
        sigmoid_noise = _validation.check_number("sigmoid_noise", sigmoid_noise, low_inclusive=True)
        score_bias_init = _validation.check_number("score_bias_init", score_bias_init, low=None)
        dtype = kwargs.get("dtype")
        score_layer = {
            "additive": lambda: AdditiveScore(units, normalize=normalize, dtype=dtype,
                                              name="additive_score"),
            "dot": lambda: DotScore(dtype=dtype, name="dot_score"),
            "general": lambda: BilinearScore(dtype=dtype, name="general_score"),
        }[score]()
        super().__init__(score=score_layer, seed=seed, **kwargs)
        self.score_name = score
        self.units = units
        self.normalize = bool(normalize)
        self.sigmoid_noise = sigmoid_noise
        self.score_bias_init = score_bias_init
        self.mode = mode
        self.seed_generator = keras.random.SeedGenerator(seed)

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        self.score_bias = self.add_weight(
            name="score_bias", shape=(),
            initializer=keras.initializers.Constant(self.score_bias_init),
        )

    @staticmethod
    def initial_alignment(batch_size, length, dtype="float32"):
        """One-hot at memory position 0: where the scan starts."""
        return ops.one_hot(ops.zeros((batch_size,), "int32"), length, dtype=dtype)

    def call(
        self,
        query,
        value,
        previous_alignment=None,
        key=None,
        mask=None,
        value_mask=None,
        key_mask=None,
        precomputed_keys=None,
        return_attention_scores=False,
        training=None,
    ):
        _validation.check_rank("query", query.shape, 2, self.name)
        query, key, mask, _, value_mask, _ = self._standardize_inputs(
            query, value, key, mask, None, value_mask, key_mask
        )
        if previous_alignment is None:
            previous_alignment = self.initial_alignment(ops.shape(value)[0], value.shape[1])
        _validation.check_mask(
            "previous_alignment", previous_alignment, [(value.shape[0], value.shape[1])], self.name
        )
        energy = ops.cast(self._scores(query, key, precomputed_keys)[:, 0], "float32")
        energy = energy + ops.cast(self.score_bias, "float32")
        if self.mode == "hard":
            p_choose = ops.cast(energy > 0, "float32")
        else:
            if training and self.sigmoid_noise > 0:
                energy = energy + self.sigmoid_noise * keras.random.normal(
                    ops.shape(energy), seed=self.seed_generator
                )
            p_choose = ops.sigmoid(energy)
        padding = attn_ops.merge_masks(mask, value_mask, key_mask)
        if padding is not None:
            p_choose = p_choose * ops.cast(padding, "float32")
        alignment = monotonic_alignment(
            p_choose, ops.cast(previous_alignment, "float32"), self.mode
        )
        alignment = ops.cast(alignment, self.compute_dtype)
        context = ops.squeeze(attn_ops.weighted_sum(alignment[:, None], value), 1)
        if return_attention_scores:
            return context, alignment
        return context

    def compute_mask(self, query, previous_mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        for key in ("use_scale", "dropout"):
            config.pop(key)
        config.update(
            score=self.score_name,
            units=self.units,
            normalize=self.normalize,
            sigmoid_noise=self.sigmoid_noise,
            score_bias_init=self.score_bias_init,
            mode=self.mode,
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
