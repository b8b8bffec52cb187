"""Attention as a pointer to an input position (Vinyals, Fortunato & Jaitly, 2015).

A pointer network keeps only the first step of additive attention, the scores

    u_j = vᵀ tanh(W₁ e_j + W₂ d)

over the encoder states `e_j` for a decoder state `d`, and uses `softmax(u)` as the
output distribution over input positions. Here the scores can be clipped,
`C · tanh(u)` (Bello et al. 2016), after `glimpses` attention read-outs have
refined the query (`d ← Σ_j softmax(u^g)_j e_j`, Vinyals, Bengio & Kudlur 2016,
"Order Matters"), and positions that are padding or already chosen are excluded,
so a decoder that samples from the result emits a permutation or a valid subset.
"""

import keras
from keras import ops

from keras_attn import _validation
from keras_attn.ops import masked_log_softmax, masked_softmax, weighted_sum
from keras_attn.scores import AdditiveScore

_PACKAGE = "keras_attn"


@keras.saving.register_keras_serializable(package=_PACKAGE)
class PointerAttention(keras.layers.Layer):
    """Log-probabilities over input positions: `log softmax_j(C tanh(vᵀ tanh(W₁e_j + W₂d)))`.

    Args:
        units: the hidden size of the additive scores.
        glimpses: number of attention read-outs that refine the query first (0:
            the plain pointer of Vinyals et al. 2015).
        logit_clip: `C` of `C · tanh(u)` (`None`: no clipping).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: the decoder state `d`, `(B, dq)`, or one per decoder step,
            `(B, Tq, dq)` (a teacher-forced sequence in one call).
        keys: the encoder states `e`, `(B, T, dk)`.
        mask: optional `(B, T)` (or `(B, Tq, T)`) booleans, true at positions
            that may be pointed to (not padding).
        chosen: optional `(B, T)` (or `(B, Tq, T)`) booleans, true at positions
            already emitted; they get probability 0.
        precomputed_keys: optional list from `precompute_keys(keys)` (`W₁ e + b`
            for the pointer and for each glimpse), to pay for it once per sequence.

    Returns:
        `(B, T)` (or `(B, Tq, T)`) float32 log-probabilities (float32 under mixed
        precision too: they feed losses and beam search). Excluded positions get a large
        negative, finite value (never `-inf`, so sums and gradients stay
        finite); a row with no allowed position is all that value.

    Example:
    >>> layer = keras_attn.PointerAttention(units=16, glimpses=1, logit_clip=10.0)
    >>> log_probs = layer(np.ones((2, 8)), np.random.rand(2, 5, 8))
    >>> tuple(log_probs.shape)
    (2, 5)
    """

    def __init__(self, units, glimpses=0, logit_clip=None, **kwargs):
        super().__init__(**kwargs)
        self.units = _validation.check_integer("units", units)
        self.glimpses = _validation.check_integer("glimpses", glimpses, least=0)
        self.logit_clip = _validation.check_number(
            "logit_clip", logit_clip, allow_none=True
        )
        self.glimpse_scores = [
            AdditiveScore(units, dtype=self.dtype_policy, name=f"glimpse_{i}")
            for i in range(glimpses)
        ]
        self.pointer_score = AdditiveScore(units, dtype=self.dtype_policy, name="pointer")
        # The padding mask is an argument; the output (scores over positions) has none.
        self.supports_masking = True

    def build(self, query_shape, keys_shape, mask_shape=None, chosen_shape=None,
              precomputed_keys_shape=None):
        self._check_query(query_shape)
        _validation.check_rank("keys", keys_shape, 3, self.name)
        query_shape = tuple(query_shape)
        for score in self.glimpse_scores:
            score.build(query_shape, tuple(keys_shape))
            query_shape = (*query_shape[:-1], keys_shape[-1])
        self.pointer_score.build(query_shape, tuple(keys_shape))
        self.built = True

    def precompute_keys(self, keys):
        """`[W₁ e + b for each glimpse …, W₁ e + b for the pointer]`."""
        return [score.precompute_keys(keys) for score in (*self.glimpse_scores,
                                                          self.pointer_score)]

    def _keys_for_scores(self, query, keys, precomputed_keys):
        """`precompute_keys(keys)`, or the caller's `precomputed_keys` once checked."""
        if precomputed_keys is None:
            return self.precompute_keys(keys)
        scores = (*self.glimpse_scores, self.pointer_score)
        if not isinstance(precomputed_keys, (list, tuple)) or len(precomputed_keys) != len(scores):
            received = (f"a list of {len(precomputed_keys)}"
                        if isinstance(precomputed_keys, (list, tuple))
                        else type(precomputed_keys).__name__)
            raise ValueError(
                f"{self.name}: `precomputed_keys` must be the list of {len(scores)} tensors "
                f"that `precompute_keys(keys)` returns (one per glimpse and one for the "
                f"pointer); received {received}."
            )
        query_size = query.shape[-1]
        for score, projected in zip(scores, precomputed_keys, strict=True):
            size = score.precomputed_keys_size(query_size, keys.shape[-1])
            _validation.check_precomputed_keys(projected, keys.shape, size, self.name)
            query_size = keys.shape[-1]  # a glimpse's output is a weighted sum of keys
        return list(precomputed_keys)

    def _check_query(self, query_shape):
        if len(query_shape) not in (2, 3):
            raise ValueError(f"{self.name}: `query` must be (B, dq) or (B, Tq, dq); received "
                             f"shape {tuple(query_shape)}.")

    def call(self, query, keys, mask=None, chosen=None, precomputed_keys=None):
        self._check_query(query.shape)
        _validation.check_rank("keys", keys.shape, 3, self.name)
        _validation.check_dtype("floating", self.name, query=query, keys=keys)
        single_step = len(query.shape) == 2
        batch, positions = keys.shape[0], keys.shape[1]
        expected = [(batch, positions), (batch, query.shape[1] if not single_step else 1,
                                         positions)]
        _validation.check_mask("mask", mask, expected, self.name)
        _validation.check_mask("chosen", chosen, expected, self.name)
        if single_step:
            query = query[:, None]

        def per_step(m):  # (B, T) → (B, 1, T): the same for every query step
            m = ops.cast(m, "bool")
            return m[:, None] if len(m.shape) == 2 else m

        allowed = None
        if mask is not None:
            allowed = per_step(mask)
        if chosen is not None:
            free = ops.logical_not(per_step(chosen))
            allowed = free if allowed is None else ops.logical_and(allowed, free)
        projected = self._keys_for_scores(query, keys, precomputed_keys)
        for score, glimpse_keys in zip(self.glimpse_scores, projected[:-1], strict=True):
            weights = masked_softmax(score.score(query, glimpse_keys), allowed)
            query = weighted_sum(weights, keys)
        logits = self.pointer_score.score(query, projected[-1])
        if self.logit_clip is not None:
            logits = self.logit_clip * ops.tanh(logits)
        log_probs = masked_log_softmax(logits, allowed)
        return log_probs[:, 0] if single_step else log_probs

    def compute_mask(self, query, keys, mask=None, chosen=None, precomputed_keys=None):
        return None

    def compute_output_shape(self, query_shape, keys_shape, *args, **kwargs):
        return (*tuple(query_shape)[:-1], keys_shape[1])

    def get_config(self):
        return {**super().get_config(), "units": self.units, "glimpses": self.glimpses,
                "logit_clip": self.logit_clip}
