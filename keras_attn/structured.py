"""Structured attention: a linear-chain CRF over which keys are attended."""

import keras
from keras import ops

from keras_attn import ops as attn_ops
from keras_attn.attention import Attention

# A log-potential that forbids a state: large, but finite in float32 sums.
_FORBIDDEN = -1e9


def chain_marginals(unary, transitions, mask=None):
    """`p(z_j = 1)` of a binary linear-chain CRF, by forward–backward in log space.

    `p(z) ∝ exp(Σ_j z_j θ_j + Σ_j A[z_{j−1}, z_j])` over `z ∈ {0, 1}^T`.

    Args:
        unary: `(..., T)` scores `θ_j`, the log-potential of `z_j = 1` (that of
            `z_j = 0` is 0).
        transitions: `(2, 2)` pairwise log-potentials `A[z_{j−1}, z_j]`.
        mask: optional boolean `(..., T)`; a masked position is held at `z_j = 0`
            and linked to no neighbour, so the chain runs over the others.

    Returns:
        `(..., T)` marginals, in float32; 0 at masked positions.
    """
    unary = ops.cast(unary, "float32")
    transitions = ops.cast(transitions, "float32")
    shape = ops.shape(unary)
    length = shape[-1]
    present = (ops.ones_like(unary) if mask is None
               else ops.cast(ops.broadcast_to(ops.cast(mask, "bool"), shape), "float32"))
    unary = ops.where(present > 0, unary, _FORBIDDEN * ops.ones_like(unary))
    # Time-major (T, N, ...): `z_j = 0` has potential 0, `z_j = 1` has θ_j.
    theta = ops.reshape(unary, (-1, length))
    theta = ops.stack([ops.zeros_like(theta), theta], axis=-1)  # (N, T, 2)
    theta = ops.transpose(theta, (1, 0, 2))  # (T, N, 2)
    present = ops.transpose(ops.reshape(present, (-1, length)))  # (T, N)
    previous = ops.concatenate([ops.zeros_like(present[:1]), present[:-1]], axis=0)
    # (T, N, 1, 1): the transitions apply between unmasked neighbours only.
    linked = (present * previous)[..., None, None]

    def forward(alpha, step):
        theta_j, linked_j = step
        alpha = theta_j + ops.logsumexp(alpha[:, :, None] + linked_j * transitions, axis=1)
        return alpha, alpha

    def backward(beta, step):
        theta_next, linked_next = step
        beta = ops.logsumexp(linked_next * transitions + (theta_next + beta)[:, None, :], axis=2)
        return beta, beta

    # beta_j comes from theta_{j+1}: the backward pass runs over the shifted sequence.
    start = ops.zeros_like(theta[0])
    steps = theta.shape[0]
    if steps is not None:
        # A known length is unrolled: XLA on TensorFlow cannot differentiate a scan.
        alphas, alpha = [], start
        for j in range(steps):
            alpha, _ = forward(alpha, (theta[j], linked[j]))
            alphas.append(alpha)
        betas, beta = [start], start
        for j in range(steps - 1, 0, -1):
            beta, _ = backward(beta, (theta[j], linked[j]))
            betas.insert(0, beta)
        alphas, betas = ops.stack(alphas), ops.stack(betas)
    else:
        _, alphas = ops.scan(forward, start, (theta, linked))
        _, later = ops.scan(backward, start, (theta[1:], linked[1:]), reverse=True)
        betas = ops.concatenate([later, start[None]], axis=0)
    log_partition = ops.logsumexp(alphas[-1], axis=-1)  # (N,)
    marginals = ops.exp(alphas[..., 1] + betas[..., 1] - log_partition[None, :])  # (T, N)
    marginals = marginals * present
    return ops.reshape(ops.transpose(marginals), shape)


@keras.saving.register_keras_serializable(package="keras_attn")
class SegmentAttention(Attention):
    """Structured attention with a linear-chain CRF: `c_i = Σ_j p(z_j = 1 | q_i, k) v_j`.

    Kim, Denton, Hoang & Rush (2017), "Structured Attention Networks", §3.2
    ("segmentation attention"). Each key `j` is attended or not, `z_j ∈ {0, 1}`,
    and the selections form a chain with learned transition potentials:

        p(z | q_i, k) ∝ exp(Σ_j z_j s(q_i, k_j) + Σ_j A[z_{j−1}, z_j])

    The weights are the marginals `p(z_j = 1)`, computed exactly by forward–backward
    in log space (`chain_marginals`) and differentiated by autodiff. They need not
    sum to 1: several keys, typically a contiguous span, can each be attended with
    probability near 1. With `A = 0` (the initial value) the `z_j` are independent
    and the weights are `sigmoid(s(q_i, k_j))`.

    Masks as in `Attention`: a masked key is never selected and links no neighbours;
    a padded query gets zero weights and a zero context.

    Args:
        score: the unary score `s`, as in `Attention` (a name or an
            `AttentionScore` layer).
        use_scale: multiply the scores by a learned scalar.
        dropout: dropout rate on the weights during training.
        seed: seed of that dropout.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments and returns: as `Attention`.

    Example:

    >>> query = np.random.rand(2, 3, 8).astype("float32")
    >>> memory = np.random.rand(2, 5, 8).astype("float32")
    >>> context, weights = keras_attn.SegmentAttention(score="general")(
    ...     query, memory, return_attention_scores=True)
    >>> tuple(context.shape), bool(np.all(ops.convert_to_numpy(weights) <= 1.0))
    ((2, 3, 8), True)
    """

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        self.transitions = self.add_weight(name="transitions", shape=(2, 2), initializer="zeros")

    _inferring_shapes = False

    def compute_output_spec(self, *args, **kwargs):
        # The marginals have the softmax weights' shape and dtype, and a backend
        # cannot trace the chain's scan over the unknown sizes of shape inference.
        self._inferring_shapes = True
        try:
            return super().compute_output_spec(*args, **kwargs)
        finally:
            self._inferring_shapes = False

    def _attention_weights(self, scores, training=None, **masks):
        if self._inferring_shapes:
            return attn_ops.attention_weights(scores, **masks)
        scores, merged = attn_ops.biased_scores_and_mask(scores, **masks)
        if merged is not None:
            merged = ops.broadcast_to(merged, ops.shape(scores))
        weights = chain_marginals(scores, self.transitions, merged)
        return ops.cast(weights, scores.dtype)
