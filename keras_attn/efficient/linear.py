"""Linear attention (Katharopoulos et al. 2020): kernel feature maps instead of softmax."""

import keras
from keras import ops

from keras_attn import _validation
from keras_attn import ops as attn_ops
from keras_attn.multi_head import MultiHeadAttention

_FEATURE_MAPS = ("elu", "relu")


@keras.saving.register_keras_serializable(package="keras_attn")
class LinearAttention(MultiHeadAttention):
    """Multi-head linear attention: `O(T)` time and memory in the sequence length.

    Katharopoulos, Vyas, Pappas & Fleuret 2020, "Transformers are RNNs: Fast
    Autoregressive Transformers with Linear Attention". The softmax similarity
    `exp(q·k)` is replaced by a kernel `φ(q)·φ(k)`, so the sum over keys can be
    taken first (eq. 5):

        `V'_i = φ(Q_i)ᵀ Σ_j φ(K_j) V_jᵀ / φ(Q_i)ᵀ Σ_j φ(K_j)`,   `φ(x) = elu(x) + 1`,

    `O(T · d_k · d_v)` instead of `O(T² · d)`. Causal (`use_causal_mask=True`)
    the sums run over `j ≤ i`, the transformer as an RNN with the state
    `S_i = S_{i−1} + φ(K_i) V_iᵀ` (eq. 8–10); it is computed in chunks of
    `chunk_size` steps, quadratic inside a chunk and through the running state
    across chunks, so memory grows with `T / chunk_size`, not `T`.

    Projections, heads and the output projection are `MultiHeadAttention`'s
    (no `1/√d` scaling: `φ` has none). The sums run in float32 under mixed
    precision (a float16 sum over thousands of keys overflows).

    Masks: key padding masks (`(B, Tk)`; a masked key adds nothing to either
    sum) and query padding; a query with no unmasked key gets a zero output.
    A full `(B, Tq, Tk)` mask or an `attention_bias` would need the score matrix
    this layer never forms, and raise `ValueError`.

    `num_heads`, `key_dim`, `value_dim`, `use_bias`, `output_shape`,
    `use_output_projection`, `rope_max_wavelength`, `kernel_initializer` and
    `bias_initializer` are `MultiHeadAttention`'s.

    Args:
        feature_map: `"elu"` (`elu(x) + 1`, the paper's) or `"relu"`.
        chunk_size: steps per chunk of the causal computation.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        As `MultiHeadAttention`, without `attention_bias` and with `mask` only
        `(B, Tk)`. `return_attention_scores=True` also forms the implied
        weights `φ(q_i)·φ(k_j) / Σ_j φ(q_i)·φ(k_j)`, `(B, heads, Tq, Tk)`, for
        plotting: that costs the `O(T²)` the layer otherwise avoids.

    Returns:
        `(B, Tq, output_shape)`, and the implied weights when asked.

    Example:

    >>> x = np.random.rand(2, 1000, 16).astype("float32")
    >>> attention = keras_attn.LinearAttention(num_heads=4, key_dim=8)
    >>> tuple(attention(x, x, use_causal_mask=True).shape)
    (2, 1000, 16)
    """

    def __init__(self, num_heads, key_dim, feature_map="elu", chunk_size=64, **kwargs):
        if kwargs.get("dropout"):
            raise ValueError(
                "`dropout` does not apply to LinearAttention: it never forms the "
                f"attention weights; received dropout={kwargs['dropout']}."
            )
        kwargs.pop("dropout", None)
        super().__init__(num_heads, key_dim, **kwargs)
        if feature_map not in _FEATURE_MAPS:
            raise ValueError(
                f"`feature_map` must be one of {_FEATURE_MAPS}; received {feature_map!r}."
            )
        self.feature_map = feature_map
        self.chunk_size = _validation.check_integer("chunk_size", chunk_size)

    def _phi(self, x):
        x = ops.cast(x, "float32")
        return ops.elu(x) + 1.0 if self.feature_map == "elu" else ops.relu(x)

    def _attend(self, q, k, v, masks, return_attention_scores, training):
        if masks["attention_bias"] is not None:
            raise ValueError(
                f"{self.name}: `attention_bias` needs the score matrix, which "
                "LinearAttention never forms; use MultiHeadAttention."
            )
        mask = masks["mask"]
        if mask is not None and len(mask.shape) != 2:
            raise ValueError(
                f"{self.name}: `mask` must be a (B, Tk) key padding mask; a full "
                f"(B, Tq, Tk) mask needs the score matrix, which LinearAttention "
                f"never forms; received `mask` of shape {tuple(mask.shape)}."
            )
        causal = masks["use_causal_mask"]
        lengths = (q.shape[2], k.shape[2])
        if causal and None not in lengths and lengths[0] != lengths[1]:
            raise ValueError(
                f"{self.name}: `use_causal_mask` needs as many queries as keys; "
                f"received {q.shape[2]} queries and {k.shape[2]} keys."
            )
        dtype = q.dtype
        fq, fk, v = self._phi(q), self._phi(k), ops.cast(v, "float32")
        key_padding = attn_ops.merge_masks(mask, *masks["key_masks"])
        if key_padding is not None:
            keep = ops.cast(key_padding, "float32")[:, None, :, None]
            fk, v = fk * keep, v * keep
        if causal:
            numerator, denominator = _causal_sums(fq, fk, v, self.chunk_size)
        else:
            numerator = ops.matmul(fq, ops.matmul(ops.swapaxes(fk, -1, -2), v))
            denominator = ops.matmul(fq, ops.sum(fk, axis=2)[..., None])
        has_keys = denominator > 0.0
        context = ops.where(
            has_keys, numerator / ops.where(has_keys, denominator, 1.0), 0.0
        )
        if masks["query_mask"] is not None:
            context = context * ops.cast(masks["query_mask"], "float32")[:, None, :, None]
        weights = None
        if return_attention_scores:
            similarity = ops.matmul(fq, ops.swapaxes(fk, -1, -2))
            if causal:
                similarity = similarity * ops.cast(attn_ops.causal_mask(ops.shape(q)[2]), "float32")
            weights = ops.where(has_keys, similarity / ops.where(has_keys, denominator, 1.0), 0.0)
            if masks["query_mask"] is not None:
                weights = weights * ops.cast(masks["query_mask"], "float32")[:, None, :, None]
            weights = ops.cast(weights, dtype)
        return ops.cast(context, dtype), weights

    def get_config(self):
        config = super().get_config()
        config.pop("dropout")
        config.pop("seed")
        config.update(feature_map=self.feature_map, chunk_size=self.chunk_size)
        return config


def _causal_sums(fq, fk, v, chunk):
    """`Σ_{j≤i} φ(k_j)v_jᵀ` and `Σ_{j≤i} φ(k_j)`, applied to `φ(q_i)`, chunk by chunk.

    Inputs `(B, H, T, d)`; returns the numerator `(B, H, T, dv)` and the
    denominator `(B, H, T, 1)`.
    """
    batch, heads = ops.shape(fq)[0], fq.shape[1]
    # The static length when known, so the output keeps its static shape.
    length = fq.shape[2] if fq.shape[2] is not None else ops.shape(fq)[2]
    pad = (-length) % chunk

    count = (length + pad) // chunk

    def chunks(x):
        if not isinstance(pad, int) or pad:
            padding = ops.zeros((batch, heads, pad, x.shape[-1]), x.dtype)
            x = ops.concatenate([x, padding], axis=2)
        return ops.reshape(x, (-1, heads, count, chunk, x.shape[-1]))

    q, k, v = chunks(fq), chunks(fk), chunks(v)
    # Inside a chunk: the quadratic form, lower triangle included.
    within = ops.matmul(q, ops.swapaxes(k, -1, -2)) * ops.cast(
        attn_ops.causal_mask(chunk)[0], q.dtype
    )
    numerator = ops.matmul(within, v)
    denominator = ops.sum(within, axis=-1, keepdims=True)
    # Across chunks: the state summed over all earlier chunks (exclusive cumsum).
    chunk_state = ops.matmul(ops.swapaxes(k, -1, -2), v)
    chunk_normalizer = ops.sum(k, axis=3)
    state = ops.cumsum(chunk_state, axis=2) - chunk_state
    normalizer = ops.cumsum(chunk_normalizer, axis=2) - chunk_normalizer
    numerator = numerator + ops.matmul(q, state)
    denominator = denominator + ops.matmul(q, normalizer[..., None])

    def unchunk(x):
        return ops.reshape(x, (-1, heads, count * chunk, x.shape[-1]))[:, :, :length]

    return unchunk(numerator), unchunk(denominator)
