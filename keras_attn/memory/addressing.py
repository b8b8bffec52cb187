"""Neural Turing machine addressing and memory access (Graves, Wayne & Danihelka, 2014, §3).

Pure `keras.ops` functions, batch first, one or several heads:

    w^c_i = softmax_i(β · cos(k, M_i))                          content      (eq. 5–6)
    w^g   = g · w^c + (1 − g) · w_{t−1}                         interpolation (eq. 7)
    w̃_i   = Σ_j w^g_j · s_{(i − j) mod N}                       circular shift (eq. 8)
    w_i   = w̃_i^γ / Σ_j w̃_j^γ,  γ ≥ 1                           sharpening   (eq. 9)
    r     = Σ_i w_i M_i                                          read         (eq. 2)
    M'_i  = M_i ⊙ (1 − w_i e) + w_i a                            erase, add   (eq. 3–4)

Shapes: memory `(B, N, D)`; per-head quantities carry a head axis `H`: keys
`(B, H, D)`, strengths and gates `(B, H)`, shift distributions `(B, H, S)` over the
offsets `−(S−1)/2 … (S−1)/2`, weightings `(B, H, N)`.

Numerical safety: the cosine divides by `max(‖k‖, ε) · max(‖M_i‖, ε)`, so a zero
key or row gives similarity 0 and a finite gradient, not NaN; sharpening raises
`max(w̃, ε)` to `γ`, so there is no `0^γ` with an undefined gradient, after dividing
by the largest weight, so the normalising sum is at least 1.
"""

import functools
import operator

import keras
from keras import ops

from keras_attn.ops import as_tensors

EPSILON = 1e-6


def _norm(x, epsilon):
    """`max(‖x‖, ε)` over the last axis. The floor is taken before the square root,
    whose derivative at 0 is infinite: erased rows whose squares flush to zero would
    otherwise turn the gradient into `∞ · 0 = NaN`."""
    return ops.sqrt(ops.maximum(ops.sum(ops.square(x), axis=-1), epsilon * epsilon))


def cosine_similarity(memory, keys, epsilon=EPSILON):
    """`cos(k_h, M_i)`: `(B, N, D)` memory, `(B, H, D)` keys → `(B, H, N)`.

    Computed in float32 and returned in the keys' dtype: in float16 the squares of
    small entries (a memory initialised to 1e-6) and `ε²` underflow to 0.
    """
    memory, keys = as_tensors(memory, keys)
    dtype = keras.backend.standardize_dtype(keys.dtype)
    memory, keys = ops.cast(memory, "float32"), ops.cast(keys, "float32")
    dots = ops.einsum("bhd,bnd->bhn", keys, memory)
    similarity = dots / (_norm(keys, epsilon)[:, :, None] * _norm(memory, epsilon)[:, None, :])
    return ops.cast(similarity, dtype)


def content_weighting(memory, keys, strengths, epsilon=EPSILON):
    """`softmax_i(β_h · cos(k_h, M_i))` → `(B, H, N)`; `strengths` `(B, H)`, β ≥ 0."""
    strengths = as_tensors(strengths)
    return ops.softmax(strengths[..., None] * cosine_similarity(memory, keys, epsilon), axis=-1)


def interpolate(content, previous, gates):
    """`g · w^c + (1 − g) · w_{t−1}`; `gates` `(B, H)` in [0, 1]."""
    content, previous, gates = as_tensors(content, previous, gates)
    gates = gates[..., None]
    return gates * content + (1.0 - gates) * previous


def circular_shift(weights, shifts):
    """Circular convolution of `weights` `(..., N)` with `shifts` `(..., S)`.

    `shifts[..., o + (S−1)/2]` is the probability of moving the focus by `o`
    slots (positive: towards higher indices), wrapping around the memory.
    """
    weights, shifts = as_tensors(weights, shifts)
    size = shifts.shape[-1]
    if size is None or size % 2 != 1:
        raise ValueError(
            f"`shifts` must have an odd size on its last axis (offsets −r … r); received "
            f"shape {tuple(shifts.shape)}."
        )
    radius = size // 2
    # A sum of weighted rolls, not a stack of them reduced over a new last axis: the
    # same arithmetic, but XLA:CPU runs the stacked form ~35x slower at batch 16.
    shifted = 0.0
    for index, offset in enumerate(range(-radius, radius + 1)):
        shifted = shifted + ops.roll(weights, offset, axis=-1) * shifts[..., index : index + 1]
    return shifted


def sharpen(weights, gammas, epsilon=EPSILON):
    """`w̃^γ / Σ w̃^γ` with `gammas` `(B, H)` ≥ 1; safe at zero weights.

    The weights are first divided by their maximum (which leaves the result
    unchanged), so the largest power is 1 and the sum cannot underflow however
    flat the weighting and large `γ` are.
    """
    weights, gammas = as_tensors(weights, gammas)
    peak = ops.maximum(ops.max(weights, axis=-1, keepdims=True), epsilon)
    # `w̃^γ / Σ w̃^γ` is `softmax(γ · log w̃)`: the same value, and on XLA:CPU a
    # backward pass 3x faster than through `power`.
    return ops.softmax(gammas[..., None] * ops.log(ops.maximum(weights / peak, epsilon)), axis=-1)


def address(memory, previous, keys, strengths, gates, shifts, gammas, epsilon=EPSILON):
    """The whole addressing pipeline: content → interpolation → shift → sharpening."""
    content = content_weighting(memory, keys, strengths, epsilon)
    return sharpen(circular_shift(interpolate(content, previous, gates), shifts), gammas, epsilon)


def read(memory, weights):
    """`r_h = Σ_i w_{h,i} M_i`: `(B, N, D)`, `(B, H, N)` → `(B, H, D)`."""
    memory, weights = as_tensors(memory, weights)
    return ops.einsum("bhn,bnd->bhd", weights, memory)


def write(memory, weights, erase, add):
    """Erase then add, for every write head.

    With several heads the erasures multiply and the additions sum, so the
    order of the heads does not matter (Graves et al. §3.2).

    Args:
        memory: `(B, N, D)`.
        weights: `(B, H, N)` write weightings.
        erase: `(B, H, D)` in [0, 1].
        add: `(B, H, D)`.
    """
    memory, weights, erase, add = as_tensors(memory, weights, erase, add)
    heads = weights.shape[1]
    if heads is None:  # a head count known only when run
        keep = ops.prod(1.0 - weights[..., None] * erase[:, :, None, :], axis=1)
    else:
        # The same product one head's factor at a time: on JAX, `ops.prod` over the
        # head axis of `(B, H, N, D)` factors made an NTM's training step ~1.5x slower
        # (benchmarks/memory_speed.py).
        keep = functools.reduce(operator.mul, [
            1.0 - weights[:, head, :, None] * erase[:, head, None, :] for head in range(heads)
        ])
    return memory * keep + ops.einsum("bhn,bhd->bnd", weights, add)
