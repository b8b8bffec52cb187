"""Sparse attention: a sliding window, Longformer's global tokens, BigBird's random blocks."""

import math

import keras
import numpy as np
from keras import ops

from keras_attn import _validation
from keras_attn import ops as attn_ops
from keras_attn.multi_head import MultiHeadAttention


@keras.saving.register_keras_serializable(package="keras_attn")
class SparseAttention(MultiHeadAttention):
    """Multi-head self-attention over a sparse pattern: window, global and random keys.

    One mechanism for the three sparse patterns of the efficient-attention
    literature. Query `i` attends to key `j` when

    * `|i − j| ≤ window` — the sliding window (Beltagy, Peters & Cohan 2020,
      "Longformer"; alone, `SparseAttention(window=w)` is sliding-window
      attention);
    * `i < global_tokens` or `j < global_tokens` — global tokens, which see and
      are seen by every position (Longformer's global attention; BigBird's
      "ITC" global tokens);
    * the block of `j` is one of the `random_blocks` blocks drawn for the block
      of `i` — BigBird's random attention (Zaheer et al. 2020, "Big Bird:
      Transformers for Longer Sequences"), blocks of `block_size` tokens drawn
      once, from `seed`, among the blocks the window does not reach.

    (`use_causal_mask` also requires `j ≤ i`; random blocks are then drawn among
    earlier blocks.) Within the pattern it is scaled dot-product attention with
    `MultiHeadAttention`'s projections, so with its weights copied it gives
    exactly `MultiHeadAttention(mask=pattern_mask(T))`. But only the allowed
    keys are scored: the queries go in blocks of `block_size`, and each block
    gathers its `(2⌈w/b⌉ + 1)·b` window keys, the global keys and its random
    blocks, so time and memory grow as `T · (window + global + random)`, not
    `T²`; only the global tokens' own rows are dense.

    `num_heads`, `key_dim`, `value_dim`, `dropout`, `use_bias`, `output_shape`,
    `use_output_projection`, `rope_max_wavelength`, `kernel_initializer` and
    `bias_initializer` are `MultiHeadAttention`'s.

    Args:
        window: one-sided window width `w ≥ 1` (each query sees `2w + 1` keys).
        global_tokens: how many leading positions are global.
        random_blocks: random key blocks per query block.
        block_size: tokens per block (default `window`).
        seed: seed of the random blocks (the pattern is fixed per layer, and
            saved with it) and of the dropout.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        As `MultiHeadAttention`, for self-attention (as many queries as keys,
        a static length) with `mask` a `(B, T)` key padding mask and no
        `attention_bias`. `return_attention_scores=True` also returns the dense
        weights `(B, heads, T, T)`, zero outside the pattern: for plotting, at
        the `O(T²)` cost the layer otherwise avoids.

    Returns:
        `(B, T, output_shape)`, and the weights when asked.

    Example:

    >>> x = np.random.rand(2, 512, 32).astype("float32")
    >>> bigbird = keras_attn.SparseAttention(
    ...     num_heads=4, key_dim=8, window=32, global_tokens=2, random_blocks=1)
    >>> tuple(bigbird(x, x).shape)
    (2, 512, 32)
    >>> pattern = bigbird.pattern_mask(512)
    >>> int(pattern[300].sum()) <= 2 * 32 + 1 + 2 + 32
    True
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        window,
        global_tokens=0,
        random_blocks=0,
        block_size=None,
        seed=None,
        **kwargs,
    ):
        super().__init__(num_heads, key_dim, seed=seed, **kwargs)
        block_size = window if block_size is None else block_size
        self.window = _validation.check_integer("window", window)
        self.global_tokens = _validation.check_integer("global_tokens", global_tokens, least=0)
        self.random_blocks = _validation.check_integer("random_blocks", random_blocks, least=0)
        self.block_size = _validation.check_integer("block_size", block_size)
        self._plans = {}

    # -- the pattern ----------------------------------------------------------
    def _random_key_blocks(self, blocks, causal):
        """`{query block: sorted random key blocks}`, fixed by the seed."""
        rng = np.random.default_rng(0 if self.seed is None else self.seed)
        reach = math.ceil(self.window / self.block_size)
        chosen = {}
        for block in range(blocks):
            far = [
                m for m in range(blocks)
                if (m < block - reach) or (not causal and m > block + reach)
            ]
            count = min(self.random_blocks, len(far))
            chosen[block] = sorted(rng.choice(far, size=count, replace=False).tolist())
        return chosen

    def pattern_mask(self, length, causal=False):
        """Boolean `(T, T)` numpy array: `[i, j]` true where query `i` may see key `j`."""
        i = np.arange(length)[:, None]
        j = np.arange(length)[None, :]
        allowed = (np.abs(i - j) <= self.window) | (i < self.global_tokens)
        allowed |= j < self.global_tokens
        if self.random_blocks:
            blocks = -(-length // self.block_size)
            for block, keys in self._random_key_blocks(blocks, causal).items():
                b = self.block_size
                for key_block in keys:
                    allowed[block * b:(block + 1) * b, key_block * b:(key_block + 1) * b] = True
        if causal:
            allowed &= j <= i
        return allowed

    def _cached_pattern(self, length, causal):
        """`pattern_mask`, built once per `(T, causal)` rather than on every call."""
        key = ("pattern", length, causal)
        if key not in self._plans:
            self._plans[key] = self.pattern_mask(length, causal)
        return self._plans[key]

    def _plan(self, length, causal):
        """The gather plan for the blocked computation, cached per `(T, causal)`.

        Returns `(key_index (nb·K,), slot_valid (nb, b, K))`: the key position
        each of the `K` slots of each query block reads, and whether query `i`
        of the block may use it. Global keys, window keys and random keys fill
        disjoint slots, so no key is counted twice.
        """
        if (length, causal) in self._plans:
            return self._plans[(length, causal)]
        b, g = self.block_size, self.global_tokens
        blocks = -(-length // b)
        reach = math.ceil(self.window / b)
        random_blocks = self._random_key_blocks(blocks, causal) if self.random_blocks else {}
        query = np.arange(blocks * b).reshape(blocks, b, 1)
        index, valid = [], []
        for block in range(blocks):
            keys = [np.arange(g)]
            window_keys = np.arange((block - reach) * b, (block + reach + 1) * b)
            keys.append(window_keys)
            picked = random_blocks.get(block, [])
            for key_block in picked:
                keys.append(np.arange(key_block * b, (key_block + 1) * b))
            unused = self.random_blocks - len(picked)
            keys.append(np.full(unused * b, -1))
            keys = np.concatenate(keys)
            rows = query[block]
            ok = np.broadcast_to((keys >= 0) & (keys < length), (b, keys.size)).copy()
            is_window = np.zeros(keys.shape, bool)
            is_window[g:g + window_keys.size] = True
            ok &= ~is_window | ((np.abs(rows - keys) <= self.window) & (keys >= g))
            is_random = np.arange(keys.size) >= g + window_keys.size
            ok &= ~is_random | (keys >= g)
            if causal:
                ok &= keys <= rows
            index.append(np.clip(keys, 0, length - 1))
            valid.append(ok)
        plan = (np.concatenate(index).astype("int32"), np.stack(valid))
        self._plans[(length, causal)] = plan
        return plan

    # -- the mechanism --------------------------------------------------------
    def _attend(self, q, k, v, masks, return_attention_scores, training):
        length = q.shape[2]
        if masks["attention_bias"] is not None:
            raise ValueError(
                f"{self.name}: `attention_bias` is not supported by SparseAttention."
            )
        mask = masks["mask"]
        if mask is not None and len(mask.shape) != 2:
            raise ValueError(
                f"{self.name}: `mask` must be a (B, T) key padding mask (the pattern "
                f"is the layer's own); received `mask` of shape {tuple(mask.shape)}."
            )
        if length is None or k.shape[2] != length:
            raise ValueError(
                f"{self.name}: SparseAttention is self-attention over a static "
                f"length: as many queries as keys, both known; received {length} "
                f"queries and {k.shape[2]} keys."
            )
        causal = bool(masks["use_causal_mask"])
        key_padding = attn_ops.merge_masks(mask, *masks["key_masks"])
        query_mask = masks["query_mask"]
        q = q * ops.cast(1.0 / math.sqrt(self.key_dim), q.dtype)

        key_index, slot_valid = self._plan(length, causal)
        b = self.block_size
        blocks, slots = slot_valid.shape[0], slot_valid.shape[2]
        padded = ops.pad(q, ((0, 0), (0, 0), (0, blocks * b - length), (0, 0)))
        q_blocks = ops.reshape(padded, (-1, self.num_heads, blocks, b, self.key_dim))
        k_slots = ops.reshape(
            ops.take(k, key_index, axis=2), (-1, self.num_heads, blocks, slots, self.key_dim)
        )
        v_slots = ops.reshape(
            ops.take(v, key_index, axis=2), (-1, self.num_heads, blocks, slots, self.value_dim)
        )
        allowed = ops.convert_to_tensor(slot_valid)[None, None]
        if key_padding is not None:
            slot_padding = ops.take(ops.cast(key_padding, "bool"), key_index, axis=1)
            allowed = ops.logical_and(
                allowed, ops.reshape(slot_padding, (-1, 1, blocks, 1, slots))
            )
        weights = attn_ops.masked_softmax(
            ops.matmul(q_blocks, ops.swapaxes(k_slots, -1, -2)), allowed
        )
        dropped = self.dropout_layer(weights, training=training) if self.dropout else weights
        context = ops.matmul(dropped, ops.cast(v_slots, dropped.dtype))
        context = ops.reshape(context, (-1, self.num_heads, blocks * b, self.value_dim))
        context = context[:, :, :length]

        if self.global_tokens:
            # The global tokens' own rows see every key: dense, but only g rows.
            g = min(self.global_tokens, length)
            global_weights = attn_ops.attention_weights(
                ops.matmul(q[:, :, :g], ops.swapaxes(k, -1, -2)),
                key_masks=(key_padding,),
                mask=ops.convert_to_tensor(self._cached_pattern(length, causal)[None, :g]),
                heads=True,
            )
            global_context = ops.matmul(
                self.dropout_layer(global_weights, training=training) if self.dropout
                else global_weights,
                ops.cast(v, global_weights.dtype),
            )
            context = ops.concatenate([global_context, context[:, :, g:]], axis=2)
        if query_mask is not None:
            context = context * ops.cast(query_mask, context.dtype)[:, None, :, None]

        dense_weights = None
        if return_attention_scores:
            dense_weights = attn_ops.attention_weights(
                ops.matmul(q, ops.swapaxes(k, -1, -2)),
                mask=ops.convert_to_tensor(self._cached_pattern(length, causal)[None]),
                query_mask=query_mask,
                key_masks=(key_padding,),
                heads=True,
            )
        return context, dense_weights

    def get_config(self):
        config = super().get_config()
        config.update(
            window=self.window,
            global_tokens=self.global_tokens,
            random_blocks=self.random_blocks,
            block_size=self.block_size,
        )
        return config
