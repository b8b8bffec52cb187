"""Shared numerics for every attention mechanism in `keras_attn`.

Each mechanism turns scores into weights with `masked_softmax` and weights into a
context with `weighted_sum`; the masks it needs come from `causal_mask` and
`merge_masks`. Keeping these in one place is what makes every layer agree on the
masking rules:

* a masked key gets exactly zero weight;
* a query row whose keys are all masked gets zero weights (and so a zero context),
  never NaN and never a uniform spread over padding;
* no constant overflows a half-precision dtype: the softmax runs in float32 for
  float16/bfloat16 scores (float16 scores that overflowed to ±inf are clipped to
  its finite range) and masked positions are filled with a value that is finite
  in that dtype, then zeroed with `where`.
"""

import warnings

import numpy as np
from keras import ops

_HALF_PRECISION = ("float16", "bfloat16")
_ARRAY_LIKE = (np.ndarray, np.generic, list, tuple, int, float)


def as_tensors(*values):
    """Array-likes (numpy arrays, lists, Python numbers) as backend tensors;
    tensors, symbolic ones included, and `None` pass through unchanged.

    For the public functions that take plain arrays: numpy's operators defer to
    TensorFlow and JAX arrays but not to PyTorch tensors, so `np.ndarray * tensor`
    raises a `TypeError` on the torch backend unless the array is converted first.
    """
    converted = tuple(ops.convert_to_tensor(v) if isinstance(v, _ARRAY_LIKE) else v
                      for v in values)
    return converted[0] if len(converted) == 1 else converted


def standardize_dtype(dtype):
    """Returns a dtype's canonical string name (`"float32"`, `"bool"`, ...)."""
    import keras

    return keras.backend.standardize_dtype(dtype)


def mask_fill_value(dtype):
    """A large negative score that is finite in `dtype`.

    float16 cannot hold -1e9 (it becomes -inf, and `0 * inf` or an all -inf row
    becomes NaN), so it gets -3e4, as Keras's own `Softmax` does.
    """
    return -3e4 if standardize_dtype(dtype) == "float16" else -1e9


def _half_to_float32(scores, dtype):
    """Half-precision scores in float32, with float16 overflow (±inf) clipped.

    A float16 dot product of large inputs overflows to ±inf before any softmax,
    and `inf - inf` is NaN; clipped to float16's finite range, such a key simply
    gets the largest score.
    """
    if dtype not in _HALF_PRECISION:
        return scores
    x = ops.cast(scores, "float32")
    if dtype == "float16":
        x = ops.clip(x, -65504.0, 65504.0)
    return x


def _softmax(x, axis):
    """`ops.softmax`, without Keras's warning for an axis of size 1: attention over
    one key (a one-token source, a one-slot memory) is legitimate, and its weight 1."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="You are using a softmax over axis",
                                category=UserWarning)
        return ops.softmax(x, axis=axis)


def masked_softmax(scores, mask=None, axis=-1):
    """Softmax of `scores` along `axis`, restricted to positions where `mask` holds.

    `α_ij = exp(s_ij) / Σ_{j': m_ij'} exp(s_ij')` for `m_ij` true, `α_ij = 0`
    otherwise; a row with no true `m_ij` is all zeros.

    Args:
        scores: float tensor of attention scores, e.g. `(B, Tq, Tk)`.
        mask: optional boolean (or 0/1) tensor broadcastable to `scores`;
            true where a key may be attended to.
        axis: the key axis.

    Returns:
        Weights of `scores`'s shape and dtype. Half-precision scores are
        normalised in float32 and cast back.
    """
    dtype = standardize_dtype(scores.dtype)
    x = _half_to_float32(scores, dtype)
    if mask is None:
        return ops.cast(_softmax(x, axis), dtype)
    mask = ops.cast(mask, "bool")
    x = ops.where(mask, x, ops.cast(mask_fill_value(x.dtype), x.dtype))
    weights = _softmax(x, axis)
    # Zeroes masked keys exactly and turns an all-masked row (which the
    # softmax left uniform) into zeros, without NaN in value or gradient.
    weights = ops.where(mask, weights, ops.zeros_like(weights))
    return ops.cast(weights, dtype)


def masked_log_softmax(scores, mask=None, axis=-1):
    """Log-softmax restricted to `mask`, computed in at least float32.

    Masked positions get the dtype's `mask_fill_value` (a large negative, finite
    log-probability) rather than `-inf`, so sums and gradients stay finite; the
    valid positions of a row are exactly the log of `masked_softmax`.
    """
    dtype = standardize_dtype(scores.dtype)
    x = _half_to_float32(scores, dtype)
    fill = ops.cast(mask_fill_value("float32"), x.dtype)
    if mask is not None:
        x = ops.where(ops.cast(mask, "bool"), x, fill)
    log_probs = ops.log_softmax(x, axis=axis)
    if mask is not None:
        log_probs = ops.where(ops.cast(mask, "bool"), log_probs, fill)
    return log_probs


def weighted_sum(weights, values):
    """The context `c_i = Σ_j α_ij v_j`.

    Args:
        weights: `(..., Tq, Tk)` attention weights.
        values: `(..., Tk, dv)` values, with the same leading axes.

    Returns:
        `(..., Tq, dv)`.
    """
    return ops.matmul(weights, ops.cast(values, weights.dtype))


def causal_mask(query_length, key_length=None):
    """Boolean `(1, Tq, Tk)` mask that lets query `i` see keys `j <= i`.

    The triangle is aligned top-left, as in Keras's `MultiHeadAttention`.
    """
    key_length = query_length if key_length is None else key_length
    rows = ops.expand_dims(ops.arange(query_length, dtype="int32"), -1)
    cols = ops.expand_dims(ops.arange(key_length, dtype="int32"), 0)
    return ops.expand_dims(ops.greater_equal(rows, cols), 0)


def merge_masks(*masks):
    """Logical AND of the masks that are not `None` (`None` if all are)."""
    merged = None
    for mask in masks:
        if mask is None:
            continue
        mask = ops.cast(mask, "bool")
        merged = mask if merged is None else ops.logical_and(merged, mask)
    return merged


def attention_mask(
    query_length,
    key_length,
    mask=None,
    query_mask=None,
    key_masks=(),
    use_causal_mask=False,
):
    """Merges the masks an attention layer can receive into one `(B|1, Tq|1, Tk)`.

    Args:
        query_length, key_length: `Tq` and `Tk`.
        mask: explicit mask, `(B, Tk)` key padding or `(B, Tq, Tk)`.
        query_mask: `(B, Tq)` query padding: a padded query attends to nothing,
            so its weights and context are zero.
        key_masks: `(B, Tk)` padding masks of the keys and values.
        use_causal_mask: also forbid keys after the query's own position.

    Returns:
        A boolean mask broadcastable to `(B, Tq, Tk)`, or `None` if nothing masks.
    """
    parts = []
    if mask is not None:
        mask = ops.cast(mask, "bool")
        parts.append(ops.expand_dims(mask, 1) if len(mask.shape) == 2 else mask)
    if query_mask is not None:
        parts.append(ops.expand_dims(ops.cast(query_mask, "bool"), -1))
    for key_mask in key_masks:
        if key_mask is not None:
            parts.append(ops.expand_dims(ops.cast(key_mask, "bool"), 1))
    if use_causal_mask:
        parts.append(causal_mask(query_length, key_length))
    return merge_masks(*parts)


def attention_weights(
    scores,
    mask=None,
    query_mask=None,
    key_masks=(),
    use_causal_mask=False,
    attention_bias=None,
    heads=False,
):
    """Scores `(B, [heads,] Tq, Tk)` → weights: bias added, masks merged, masked softmax.

    The one path from scores to weights of every attention layer. Masks are as in
    `attention_mask`; with `heads=True` they are broadcast over the head axis 1.
    """
    scores, merged = biased_scores_and_mask(
        scores, mask, query_mask, key_masks, use_causal_mask, attention_bias, heads
    )
    return masked_softmax(scores, merged)


def biased_scores_and_mask(
    scores,
    mask=None,
    query_mask=None,
    key_masks=(),
    use_causal_mask=False,
    attention_bias=None,
    heads=False,
):
    """The scores with `attention_bias` added, and the merged mask of `attention_weights`.

    For mechanisms that turn scores into weights by other means than a softmax
    (hard attention's sampled one-hot) under the same masking rules.
    """
    if attention_bias is not None:
        scores = scores + ops.cast(attention_bias, scores.dtype)
    shape = ops.shape(scores)
    merged = attention_mask(
        shape[-2],
        shape[-1],
        mask=mask,
        query_mask=query_mask,
        key_masks=key_masks,
        use_causal_mask=use_causal_mask,
    )
    if merged is not None and heads:
        merged = ops.expand_dims(merged, 1)
    return scores, merged


def clip_gradient(x, limit):
    """`x` unchanged, its gradient clipped elementwise to `[−limit, limit]` on the
    way back.

    For recurrent states: Graves (2013, "Generating Sequences With Recurrent
    Neural Networks", §2) clipped the derivatives an LSTM passes back through its
    steps to [−10, 10]. Clipping the whole gradient after backpropagation cannot
    do this: a derivative that grows by a constant factor per step overflows
    float32 on a long sequence, and `inf · 0` inside the backward pass is NaN
    before any optimizer sees it.

    Args:
        x: a tensor.
        limit: a number > 0.

    Returns:
        `x`'s values, as a new tensor whose gradient is clipped.

    Example:
    >>> from keras_attn.ops import clip_gradient
    >>> state = clip_gradient(ops.ones((2, 3)), 10.0)  # inside a recurrent step
    >>> tuple(state.shape)
    (2, 3)
    """

    @ops.custom_gradient
    def identity(value):
        def gradient(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return ops.clip(upstream, -limit, limit)

        # A new tensor, not `value` itself: the output a custom gradient belongs to.
        return ops.multiply(value, ops.cast(1, value.dtype)), gradient

    return identity(x)
