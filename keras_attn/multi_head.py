"""Multi-head scaled dot-product attention."""

import math

import keras
from keras import ops

from keras_attn import _initializers, _validation
from keras_attn import ops as attn_ops
from keras_attn.positional.rotary import RotaryEmbedding


@keras.saving.register_keras_serializable(package="keras_attn")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention `att((K, V), Q) = W_o ⊕_m att((W_k^m K, W_v^m V), W_q^m Q)`.

    Vaswani et al. 2017, "Attention Is All You Need", §3.2.2: each head `m`
    projects queries, keys and values to `key_dim`/`value_dim`, runs scaled
    dot-product attention `softmax(q kᵀ / √key_dim) v`, and the concatenated
    heads `⊕_m` go through an output projection `W_o`.

    The kernels have the shapes of `keras.layers.MultiHeadAttention`, so its
    weights copy across (the head-major layout stores the query and value
    biases as `(heads, 1, dim)`), except for the key bias, which this layer
    omits: it adds `q_i · b_k` to every score of query `i`, a constant that the
    softmax cancels, so it never changes the output and never gets a gradient.

    Args:
        num_heads: number of heads.
        key_dim: size of each head's queries and keys.
        value_dim: size of each head's values (default `key_dim`).
        dropout: dropout rate on the attention weights during training.
        use_bias: biases on the query, value and output projections.
        output_shape: size of the output (default: the query's feature size).
        use_output_projection: if `False`, return the concatenated heads
            `(B, Tq, num_heads * value_dim)` without `W_o`.
        rope_max_wavelength: if set, rotate queries and keys with a rotary
            position embedding (RoPE) of this maximum wavelength after projection.
        kernel_initializer, bias_initializer: initializers of the projections.
        seed: seed of the dropout.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: `(B, Tq, dq)`.
        value: `(B, Tk, dv)`.
        key: optional `(B, Tk, dk)`; defaults to `value`.
        mask: optional boolean mask, `(B, Tk)` or `(B, Tq, Tk)` (Keras's
            `attention_mask`).
        query_mask, value_mask, key_mask: `(B, T)` padding masks; filled in from
            the inputs' Keras masks when not given.
        attention_bias: optional score bias broadcastable to
            `(B, num_heads, Tq, Tk)`, e.g. from `ALiBiBias`.
        use_causal_mask: forbid query `i` from attending to keys `j > i`.
        return_attention_scores: also return the weights `(B, num_heads, Tq, Tk)`.
        training: whether dropout is active.
        cache: optional `(B, 2, num_heads, T_cache, dim)` projected keys and values
            (from `compute_cache`, or zeros), for incremental decoding as
            keras-hub's `CachedMultiHeadAttention`. Without `cache_update_index`
            the query attends to the cache as it is (`key`/`value` are not read:
            the encoder memory of cross-attention, projected once).
        cache_update_index: with `cache`, the position of the first query: the
            keys and values of `key`/`value` are written into the cache there,
            RoPE rotates by absolute position, and `use_causal_mask` hides the
            slots after each query's own position. Every shape stays fixed, so
            a decoding loop (and beam search's reordering) keeps static shapes.
        query_start_index: with a `cache` used as it is, the position of the
            first query, for RoPE (default 0).

    Returns:
        `(B, Tq, output_shape)`, then the weights when asked, then the updated
        cache when one was given.

    Example:

    >>> x = np.random.rand(2, 10, 16).astype("float32")
    >>> mha = keras_attn.MultiHeadAttention(num_heads=4, key_dim=8)
    >>> y, w = mha(x, x, use_causal_mask=True, return_attention_scores=True)
    >>> tuple(y.shape), tuple(w.shape)
    ((2, 10, 16), (2, 4, 10, 10))
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_shape=None,
        use_output_projection=True,
        rope_max_wavelength=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = _validation.check_integer("num_heads", num_heads)
        self.key_dim = _validation.check_integer("key_dim", key_dim)
        self.value_dim = (
            _validation.check_integer("value_dim", value_dim, allow_none=True) or self.key_dim
        )
        self.dropout = _validation.check_number("dropout", dropout, low_inclusive=True, high=1.0)
        self.use_bias = bool(use_bias)
        self.output_size = _validation.check_integer("output_shape", output_shape, allow_none=True)
        self.use_output_projection = bool(use_output_projection)
        self.rope_max_wavelength = _validation.check_number(
            "rope_max_wavelength", rope_max_wavelength, allow_none=True
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.seed = seed
        self.dropout_layer = keras.layers.Dropout(self.dropout, seed=seed)
        self.rotary = (
            RotaryEmbedding(
                max_wavelength=self.rope_max_wavelength,
                sequence_axis=2,
                dtype=self.dtype_policy,
                name="rotary",
            )
            if self.rope_max_wavelength is not None
            else None
        )
        self.supports_masking = True

    _PROJECTIONS = ("query", "key", "value", "attention_output")

    def _projection(self, equation, output_shape, bias_axes, name):
        index = self._PROJECTIONS.index(name)  # each kernel its own initial draw
        return keras.layers.EinsumDense(
            equation,
            output_shape=output_shape,
            bias_axes=bias_axes if self.use_bias else None,
            kernel_initializer=_initializers.fresh(self.kernel_initializer, index),
            bias_initializer=_initializers.fresh(self.bias_initializer, index),
            dtype=self.dtype_policy,
            name=name,
        )

    def _check_shapes(self, query_shape, value_shape, key_shape):
        _validation.check_query_key_value(query_shape, value_shape, key_shape, 3, self.name)

    def build(self, query_shape, value_shape, key_shape=None):
        self._check_shapes(query_shape, value_shape, key_shape)
        key_shape = tuple(key_shape or value_shape)
        # Heads come out as (B, heads, T, dim): the batched-matmul layout of the
        # shared `masked_softmax` / `weighted_sum`, with no transposes between.
        self.query_dense = self._projection(
            "btd,dhk->bhtk", (self.num_heads, None, self.key_dim), "hk", "query"
        )
        self.query_dense.build(tuple(query_shape))
        self.key_dense = self._projection(
            "btd,dhk->bhtk", (self.num_heads, None, self.key_dim), None, "key"
        )
        self.key_dense.build(key_shape)
        self.value_dense = self._projection(
            "btd,dhk->bhtk", (self.num_heads, None, self.value_dim), "hk", "value"
        )
        self.value_dense.build(tuple(value_shape))
        if self.use_output_projection:
            out = self.output_size or query_shape[-1]
            self.output_dense = self._projection(
                "bhtk,hko->bto", (None, out), "o", "attention_output"
            )
            self.output_dense.build((None, self.num_heads, None, self.value_dim))

    def _attend(self, q, k, v, masks, return_attention_scores, training):
        """Per-head `(B, heads, T, dim)` projections → `(context, weights)`.

        Scaled dot-product attention; `masks` are `attention_weights`'s keywords.
        Without weights to return, bias or dropout it goes through
        `keras.ops.dot_product_attention`, so JAX and torch can pick a fused
        (flash) kernel on a GPU; `weights` is then `None`.
        """
        if (not return_attention_scores and masks.get("attention_bias") is None
                and not (self.dropout and training) and self.value_dim == self.key_dim):
            return self._attend_fused(q, k, v, masks), None
        q = q * ops.cast(1.0 / math.sqrt(self.key_dim), q.dtype)
        weights = attn_ops.attention_weights(
            ops.matmul(q, ops.swapaxes(k, -1, -2)), heads=True, **masks
        )
        dropped = self.dropout_layer(weights, training=training) if self.dropout else weights
        return attn_ops.weighted_sum(dropped, v), weights

    def _attend_fused(self, q, k, v, masks):
        merged = attn_ops.attention_mask(
            ops.shape(q)[2], ops.shape(k)[2], mask=masks.get("mask"),
            query_mask=masks.get("query_mask"), key_masks=masks.get("key_masks", ()),
            use_causal_mask=masks.get("use_causal_mask", False),
        )
        if merged is not None:
            batch, query_length, key_length = ops.shape(q)[0], ops.shape(q)[2], ops.shape(k)[2]
            merged = ops.broadcast_to(ops.expand_dims(ops.cast(merged, "bool"), 1),
                                      (batch, 1, query_length, key_length))
        context = ops.dot_product_attention(
            *(ops.swapaxes(x, 1, 2) for x in (q, k, v)),  # its layout: (B, T, heads, dim)
            mask=merged, scale=1.0 / math.sqrt(self.key_dim),
        )
        context = ops.swapaxes(context, 1, 2)
        if merged is not None:
            # A query with no key to attend to reads zeros, as `masked_softmax` gives.
            context = context * ops.cast(ops.any(merged, axis=-1, keepdims=True), context.dtype)
        return context

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
        training=None,
        cache=None,
        cache_update_index=None,
        query_start_index=0,
    ):
        if cache is not None:
            return self._call_cached(
                query, value, key, mask, cache, cache_update_index, query_start_index,
                use_causal_mask, attention_bias, return_attention_scores, training,
            )
        self._check_shapes(query.shape, value.shape, None if key is None else key.shape)
        _validation.check_dtype("floating", self.name, query=query, value=value, key=key)
        if key is None:
            key = value
        _validation.check_attention_mask(mask, query, value, self.name)
        _validation.check_padding_masks(
            query.shape, value.shape, self.name,
            query_mask=query_mask, value_mask=value_mask, key_mask=key_mask,
        )
        q = self.query_dense(query)
        k = self.key_dense(key)
        v = self.value_dense(value)
        if self.rotary is not None:
            q, k = self.rotary(q), self.rotary(k)
        context, weights = self._attend(
            q,
            k,
            v,
            dict(
                mask=mask,
                query_mask=query_mask,
                key_masks=(value_mask, key_mask),
                use_causal_mask=use_causal_mask,
                attention_bias=attention_bias,
            ),
            return_attention_scores,
            training,
        )
        output = self._output(context)
        if return_attention_scores:
            return output, weights
        return output

    def _output(self, context):
        if self.use_output_projection:
            return self.output_dense(context)
        batch, _, length, _ = ops.shape(context)
        return ops.reshape(
            ops.transpose(context, (0, 2, 1, 3)), (batch, length, self.num_heads * self.value_dim)
        )

    def compute_cache(self, value, key=None, start_index=0):
        """Projected (and, with RoPE, rotated) keys and values `(B, 2, heads, T, dim)`.

        The cache of a fixed memory (cross-attention over the encoder output),
        computed once per sequence. `key_dim` must equal `value_dim`.
        """
        if self.key_dim != self.value_dim:
            raise ValueError(
                f"{self.name}: a key/value cache needs `key_dim == value_dim`; received "
                f"{self.key_dim} and {self.value_dim}."
            )
        k = self.key_dense(value if key is None else key)
        v = self.value_dense(value)
        if self.rotary is not None:
            k = self.rotary(k, start_index=start_index)
        return ops.stack([k, v], axis=1)

    def _call_cached(
        self, query, value, key, mask, cache, index, query_start, use_causal_mask,
        attention_bias, return_attention_scores, training,
    ):
        if len(cache.shape) != 5 or cache.shape[1] != 2 or cache.shape[2] != self.num_heads:
            raise ValueError(
                f"{self.name}: `cache` must have shape (batch, 2, {self.num_heads}, length, "
                f"{self.key_dim}); received shape {tuple(cache.shape)}."
            )
        if use_causal_mask and index is None:
            raise ValueError(
                f"{self.name}: `use_causal_mask` with a `cache` needs `cache_update_index`."
            )
        q = self.query_dense(query)
        if index is not None:
            new = self.compute_cache(value, key, start_index=index)
            start = [0, 0, 0, ops.cast(index, "int32"), 0]
            cache = ops.slice_update(cache, start, ops.cast(new, cache.dtype))
            if self.rotary is not None:
                q = self.rotary(q, start_index=index)
        elif self.rotary is not None:
            q = self.rotary(q, start_index=query_start)
        k, v = cache[:, 0], cache[:, 1]
        if use_causal_mask:
            # Query i sits at position index + i and sees the slots up to it.
            query_positions = ops.arange(ops.shape(q)[2], dtype="int32") + ops.cast(index, "int32")
            slots = ops.arange(ops.shape(k)[2], dtype="int32")
            causal = ops.expand_dims(slots, 0) <= ops.expand_dims(query_positions, 1)
            causal = ops.broadcast_to(
                ops.expand_dims(causal, 0), (ops.shape(q)[0], ops.shape(q)[2], ops.shape(k)[2])
            )
            mask = causal if mask is None else ops.logical_and(ops.cast(mask, "bool"), causal)
        context, weights = self._attend(
            q, k, v, dict(mask=mask, attention_bias=attention_bias),
            return_attention_scores, training,
        )
        output = self._output(context)
        if return_attention_scores:
            return output, weights, cache
        return output, cache

    def compute_output_spec(
        self, query, value, key=None, return_attention_scores=False, cache=None, **kwargs
    ):
        # Stated, not traced: tracing with both batch and time unknown needs
        # reshapes that JAX's symbolic shapes cannot always resolve.
        features = (
            self.output_size or query.shape[-1]
            if self.use_output_projection
            else self.num_heads * self.value_dim
        )
        dtype = self.compute_dtype
        output = keras.KerasTensor((query.shape[0], query.shape[1], features), dtype=dtype)
        keys = value.shape[1] if cache is None else cache.shape[3]
        weights_shape = (query.shape[0], self.num_heads, query.shape[1], keys)
        outputs = [output]
        if return_attention_scores:
            outputs.append(keras.KerasTensor(weights_shape, dtype=dtype))
        if cache is not None:
            outputs.append(keras.KerasTensor(cache.shape, dtype=cache.dtype))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def compute_mask(self, query, previous_mask=None):
        # Not `previous_mask`: Keras sets that to an explicit `mask=` (over keys).
        return _validation.query_output_mask(query)

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "value_dim": self.value_dim,
            "dropout": self.dropout,
            "use_bias": self.use_bias,
            "output_shape": self.output_size,
            "use_output_projection": self.use_output_projection,
            "rope_max_wavelength": self.rope_max_wavelength,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            "seed": self.seed,
        }
