"""Product-key memory (Lample et al. 2019): exact top-k over n² keys at the cost of 2n."""

import keras
from keras import ops

from keras_attn import _validation


@keras.saving.register_keras_serializable(package="keras_attn")
class ProductKeyMemory(keras.layers.Layer):
    """A large key-value memory read by sparse attention over product keys.

    Lample, Sablayrolles, Ranzato, Denoyer & Jégou 2019, "Large Memory Layers
    with Product Keys". The memory has `n²` slots with values `V ∈ R^{n² × d_v}`;
    slot `(i, j)`'s key is the concatenation `k_ij = [c_i; c'_j]` of two
    sub-keys from two sets `C, C' ∈ R^{n × d_k/2}`. A query `q = [q₁; q₂]`
    scores `qᵀk_ij = q₁ᵀc_i + q₂ᵀc'_j`, so the best `k` of all `n²` keys are
    among the `k × k` pairs of the best `k` sub-keys of each half: the exact
    top-k costs `O(n·d_k + k²)` scores instead of `O(n²·d_k)`. The read is

        `I = top-k(qᵀk_ij)`,  `w = softmax((qᵀk_ij)_{ij ∈ I})`,  `m(x) = Σ_{ij ∈ I} w_ij v_ij`.

    The query network is a linear map (and, as in the paper, batch
    normalisation, which spreads the queries over the keys). With
    `num_heads = H` there are `H` queries and sub-key sets over the same
    values, and the heads' reads are summed. Only `H·k` value rows get a
    gradient per input.

    Args:
        num_keys: `n`, sub-keys per half (the memory has `n²` slots).
        top_k: `k`, slots read per head.
        num_heads: `H`.
        key_dim: `d_k` (even), the query and key size.
        value_dim: `d_v` (default: the input size).
        query_batch_norm: batch-normalise the queries.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(B, d)` or `(B, T, d)`.
        return_attention_scores: also return the slots read `(…, H, k)` (int,
            in `[0, n²)`) and their weights `(…, H, k)`.
        training: for the batch normalisation.

    Returns:
        `(B, d_v)` or `(B, T, d_v)`; with `return_attention_scores=True`,
        `(output, slots, weights)`.

    Example:

    >>> x = np.random.rand(8, 5, 32).astype("float32")
    >>> memory = keras_attn.memory.ProductKeyMemory(num_keys=64, top_k=8, key_dim=16)
    >>> output, slots, weights = memory(x, return_attention_scores=True)
    >>> tuple(output.shape), tuple(slots.shape)  # 4,096 slots, 8 read per position
    ((8, 5, 32), (8, 5, 1, 8))
    """

    def __init__(
        self,
        num_keys,
        top_k=8,
        num_heads=1,
        key_dim=128,
        value_dim=None,
        query_batch_norm=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        num_keys = _validation.check_integer("num_keys", num_keys)
        top_k = _validation.check_integer("top_k", top_k)
        num_heads = _validation.check_integer("num_heads", num_heads)
        key_dim = _validation.check_integer("key_dim", key_dim)
        if key_dim % 2:
            raise ValueError(f"`key_dim` must be even (two halves); received {key_dim}.")
        if top_k > num_keys:
            raise ValueError(
                f"`top_k` must be at most `num_keys`; received top_k={top_k}, num_keys={num_keys}."
            )
        self.num_keys = num_keys
        self.top_k = top_k
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = _validation.check_integer("value_dim", value_dim, allow_none=True)
        self.query_batch_norm = bool(query_batch_norm)

    def build(self, inputs_shape):
        _validation.check_rank("inputs", inputs_shape, (2, 3), self.name)
        features = inputs_shape[-1]
        value_dim = self.value_dim or features
        self.query_projection = keras.layers.Dense(
            self.num_heads * self.key_dim, dtype=self.dtype_policy, name="query_projection"
        )
        self.query_projection.build((None, features))
        self.query_norm = None
        if self.query_batch_norm:
            self.query_norm = keras.layers.BatchNormalization(
                dtype=self.dtype_policy, name="query_norm"
            )
            self.query_norm.build((None, self.num_heads * self.key_dim))
        half = self.key_dim // 2
        sub_key_init = keras.initializers.RandomUniform(-(half**-0.5), half**-0.5)
        self.sub_keys = self.add_weight(
            name="sub_keys", shape=(2, self.num_heads, self.num_keys, half),
            initializer=sub_key_init,
        )
        self.values = self.add_weight(
            name="values", shape=(self.num_keys**2, value_dim),
            initializer=keras.initializers.RandomNormal(stddev=value_dim**-0.5),
        )

    def call(self, inputs, return_attention_scores=False, training=None):
        _validation.check_rank("inputs", inputs.shape, (2, 3), self.name)
        _validation.check_dtype("floating", self.name, inputs=inputs)
        # (B, T) folded into rows and back; -1 stands for the batch.
        leading = (-1,) if len(inputs.shape) == 2 else (-1, inputs.shape[1] or ops.shape(inputs)[1])
        rows = ops.reshape(inputs, (-1, inputs.shape[-1]))
        query = self.query_projection(rows)
        if self.query_norm is not None:
            query = self.query_norm(query, training=training)
        half = self.key_dim // 2
        query = ops.reshape(query, (-1, self.num_heads, 2, half))
        sub_keys = ops.cast(self.sub_keys, query.dtype)
        # (rows, heads, n) sub-key scores of each half, and each half's best k.
        scores_1 = ops.einsum("rhd,hnd->rhn", query[:, :, 0], sub_keys[0])
        scores_2 = ops.einsum("rhd,hnd->rhn", query[:, :, 1], sub_keys[1])
        best_1, index_1 = ops.top_k(scores_1, self.top_k)
        best_2, index_2 = ops.top_k(scores_2, self.top_k)
        k = self.top_k
        pairs = best_1[..., :, None] + best_2[..., None, :]  # (rows, heads, k, k)
        pairs = ops.reshape(pairs, (-1, self.num_heads, k * k))
        best, pair = ops.top_k(pairs, k)
        slots = (
            ops.take_along_axis(index_1, pair // k, axis=-1) * self.num_keys
            + ops.take_along_axis(index_2, pair % k, axis=-1)
        )
        weights = ops.softmax(ops.cast(best, "float32"), axis=-1)
        values = ops.take(self.values, slots, axis=0)  # (rows, heads, k, d_v)
        weights = ops.cast(weights, values.dtype)
        output = ops.einsum("rhk,rhkv->rv", weights, values)
        output = ops.reshape(output, (*leading, output.shape[-1]))
        output = ops.cast(output, self.compute_dtype)
        if not return_attention_scores:
            return output
        shape = (*leading, self.num_heads, k)
        weights = ops.cast(weights, output.dtype)
        return output, ops.reshape(slots, shape), ops.reshape(weights, shape)

    def get_config(self):
        return {
            **super().get_config(),
            "num_keys": self.num_keys,
            "top_k": self.top_k,
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "value_dim": self.value_dim,
            "query_batch_norm": self.query_batch_norm,
        }
