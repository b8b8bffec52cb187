"""Transformer translator: self-attention encoder and decoder (Vaswani et al. 2017).

The same contract as `models.translator`: the training model takes `source` ids and
teacher-forced `target_in` ids and returns logits for `target_out`, with the token
ids of `models.text` (`[PAD]=0 [UNK]=1 [START]=2 [END]=3`), so the translator
task's data, loss, decoding (`models.translator.decode_ids`) and export serve both.

Each block is pre-norm (Xiong et al. 2020, "On Layer Normalization in the
Transformer Architecture"): `x + Sublayer(LayerNorm(x))`, with a final
`LayerNorm`. Positions are the sinusoidal encoding of §3.5, added to embeddings
scaled by `√d`, and optionally rotary embeddings (RoPE, Su et al. 2021) in every
attention.
"""

import math

import keras
from keras import ops

import keras_attn
from keras_attn import _validation
from keras_attn.models.text import PAD_ID
from keras_attn.models.translator.seq2seq import Seq2SeqModel
from keras_attn.models.translator.word_dropout import WordDropout


class _Block(keras.layers.Layer):
    """What the encoder and decoder blocks share: the feed-forward sublayer, the
    residual dropout and the sizes in `get_config`."""

    def __init__(
        self, model_dim, num_heads, feedforward_dim, dropout=0.0, rope_max_wavelength=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.model_dim, self.num_heads = int(model_dim), int(num_heads)
        self.feedforward_dim, self.dropout = int(feedforward_dim), float(dropout)
        self.rope_max_wavelength = rope_max_wavelength
        self.feedforward_norm = keras.layers.LayerNormalization(name="feedforward_norm")
        self.feedforward_in = keras.layers.Dense(
            feedforward_dim, activation="relu", name="feedforward_in"
        )
        self.feedforward_out = keras.layers.Dense(model_dim, name="feedforward_out")
        self.residual_dropout = keras.layers.Dropout(dropout)

    def _attention(self, name):
        return keras_attn.MultiHeadAttention(
            self.num_heads,
            self.model_dim // self.num_heads,
            dropout=self.dropout,
            rope_max_wavelength=self.rope_max_wavelength,
            name=name,
        )

    def _build_feedforward(self, shape):
        self.feedforward_norm.build(shape)
        self.feedforward_in.build(shape)
        self.feedforward_out.build((*shape[:-1], self.feedforward_dim))

    def _feedforward(self, x, training):
        hidden = self.feedforward_in(self.feedforward_norm(x))
        return x + self.residual_dropout(self.feedforward_out(hidden), training=training)

    def get_config(self):
        return {
            **super().get_config(),
            "model_dim": self.model_dim,
            "num_heads": self.num_heads,
            "feedforward_dim": self.feedforward_dim,
            "dropout": self.dropout,
            "rope_max_wavelength": self.rope_max_wavelength,
        }


@keras.saving.register_keras_serializable(package="keras_attn_models")
class TransformerEncoderBlock(_Block):
    """`x + SelfAttention(LN(x))`, then `x + FFN(LN(x))`; padded keys are masked."""

    def __init__(self, model_dim, num_heads, feedforward_dim, dropout=0.0, **kwargs):
        super().__init__(model_dim, num_heads, feedforward_dim, dropout, **kwargs)
        self.attention_norm = keras.layers.LayerNormalization(name="attention_norm")
        self.attention = self._attention("self_attention")

    def build(self, inputs_shape, mask_shape):
        self.attention_norm.build(inputs_shape)
        self.attention.build(inputs_shape, inputs_shape)
        self._build_feedforward(inputs_shape)

    def call(self, inputs, mask, training=None):
        normed = self.attention_norm(inputs)
        attended = self.attention(normed, normed, mask=mask, training=training)
        x = inputs + self.residual_dropout(attended, training=training)
        return self._feedforward(x, training)

    def compute_output_shape(self, inputs_shape, mask_shape):
        return inputs_shape


@keras.saving.register_keras_serializable(package="keras_attn_models")
class TransformerDecoderBlock(_Block):
    """Causal self-attention, attention over the encoder's memory, then the FFN,
    each as `x + Sublayer(LN(x))`. Returns the output and the cross-attention
    weights `(B, heads, T_out, T_in)`."""

    def __init__(self, model_dim, num_heads, feedforward_dim, dropout=0.0, **kwargs):
        super().__init__(model_dim, num_heads, feedforward_dim, dropout, **kwargs)
        self.self_attention_norm = keras.layers.LayerNormalization(name="self_attention_norm")
        self.self_attention = self._attention("self_attention")
        self.cross_attention_norm = keras.layers.LayerNormalization(name="cross_attention_norm")
        self.cross_attention = self._attention("cross_attention")

    def build(self, inputs_shape, memory_shape, memory_mask_shape):
        self.self_attention_norm.build(inputs_shape)
        self.self_attention.build(inputs_shape, inputs_shape)
        self.cross_attention_norm.build(inputs_shape)
        self.cross_attention.build(inputs_shape, memory_shape)
        self._build_feedforward(inputs_shape)

    def call(self, inputs, memory, memory_mask, training=None):
        normed = self.self_attention_norm(inputs)
        attended = self.self_attention(normed, normed, use_causal_mask=True, training=training)
        x = inputs + self.residual_dropout(attended, training=training)
        attended, weights = self.cross_attention(
            self.cross_attention_norm(x),
            memory,
            mask=memory_mask,
            return_attention_scores=True,
            training=training,
        )
        x = x + self.residual_dropout(attended, training=training)
        return self._feedforward(x, training), weights

    def step(self, x, memory_cache, memory_mask, self_cache, index, training=False):
        """`call` for the tokens at positions `index…` with key/value caches.

        `self_cache` holds the keys and values of the positions before (the
        causal self-attention's), `memory_cache` those of the encoder memory
        (`cross_attention.compute_cache(memory)`). Returns the output, the
        cross-attention weights and the updated `self_cache`.
        """
        normed = self.self_attention_norm(x)
        attended, self_cache = self.self_attention(
            normed, normed, cache=self_cache, cache_update_index=index, use_causal_mask=True,
            training=training,
        )
        x = x + attended
        normed = self.cross_attention_norm(x)
        # `value` is not read: the memory's keys and values are in the cache.
        attended, weights, _ = self.cross_attention(
            normed, normed, mask=memory_mask, cache=memory_cache, query_start_index=index,
            return_attention_scores=True, training=training,
        )
        return self._feedforward(x + attended, training), weights, self_cache

    def compute_output_shape(self, inputs_shape, memory_shape, memory_mask_shape):
        return inputs_shape, (
            inputs_shape[0], self.num_heads, inputs_shape[1], memory_shape[1]
        )


class _Stack(keras.layers.Layer):
    """Token embedding scaled by `√d` plus the sinusoidal encoding, a stack of
    blocks, and the final `LayerNorm` that pre-norm blocks need."""

    block_class = None

    def __init__(
        self, vocab_size, model_dim, num_heads, num_layers, feedforward_dim, dropout=0.0,
        max_wavelength=10000.0, rope_max_wavelength=None, **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size, self.model_dim, self.num_heads = vocab_size, model_dim, num_heads
        self.num_layers, self.feedforward_dim, self.dropout = num_layers, feedforward_dim, dropout
        self.max_wavelength = float(max_wavelength)
        self.rope_max_wavelength = rope_max_wavelength
        self.embedding = keras.layers.Embedding(vocab_size, model_dim, name="embedding")
        self.position_encoding = keras_attn.SinusoidalPositionEncoding(
            max_wavelength, name="position_encoding"
        )
        self.embedding_dropout = keras.layers.Dropout(dropout)
        self.blocks = [
            self.block_class(
                model_dim, num_heads, feedforward_dim, dropout,
                rope_max_wavelength=rope_max_wavelength, name=f"block_{i}",
            )
            for i in range(num_layers)
        ]
        self.final_norm = keras.layers.LayerNormalization(name="final_norm")

    def _embed(self, ids, training, start_index=0):
        x = self.embedding(ids) * ops.cast(math.sqrt(self.model_dim), self.compute_dtype)
        x = x + self.position_encoding(x, start_index=start_index)
        return self.embedding_dropout(x, training=training)

    def _build_stack(self, ids_shape, *block_shapes):
        self.embedding.build(ids_shape)
        shape = (*ids_shape, self.model_dim)
        self.position_encoding.build(shape)
        for block in self.blocks:
            block.build(shape, *block_shapes)
        self.final_norm.build(shape)

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "model_dim": self.model_dim,
            "num_heads": self.num_heads,
            "num_layers": self.num_layers,
            "feedforward_dim": self.feedforward_dim,
            "dropout": self.dropout,
            "max_wavelength": self.max_wavelength,
            "rope_max_wavelength": self.rope_max_wavelength,
        }


@keras.saving.register_keras_serializable(package="keras_attn_models")
class TransformerEncoder(_Stack):
    """Source ids `(B, T_in)` → `(memory (B, T_in, d), mask (B, T_in))`."""

    block_class = TransformerEncoderBlock

    def build(self, source_shape):
        self._build_stack(source_shape, source_shape)

    def call(self, source, training=None):
        mask = ops.not_equal(source, PAD_ID)
        x = self._embed(source, training)
        for block in self.blocks:
            x = block(x, mask, training=training)
        return self.final_norm(x), mask


@keras.saving.register_keras_serializable(package="keras_attn_models")
class TransformerDecoder(_Stack):
    """Teacher-forced logits over `target_in`, and `step` for decoding.

    The arguments are `TransformerEncoder`'s, and:

    Args:
        max_length: the longest `target_in` (`max_target_length - 1`): the size of
            the caches and buffer that `step` decodes in.

    `step` decodes with key/value caches of fixed size (`max_length` positions,
    written at the step's index), so every state keeps its shape, as
    `keras_attn.decoding` and beam search's reordering need; `step_recomputed`
    reruns the causal stack over a buffer of the tokens so far instead (the
    reference that `step` must equal).
    """

    block_class = TransformerDecoderBlock

    def __init__(
        self, vocab_size, model_dim, num_heads, num_layers, feedforward_dim, max_length,
        dropout=0.0, max_wavelength=10000.0, rope_max_wavelength=None, **kwargs,
    ):
        super().__init__(
            vocab_size, model_dim, num_heads, num_layers, feedforward_dim, dropout,
            max_wavelength, rope_max_wavelength, **kwargs,
        )
        self.max_length = int(max_length)
        # Logits in float32 under mixed precision, for a stable softmax.
        self.output_projection = keras.layers.Dense(vocab_size, dtype="float32", name="logits")

    def build(self, target_in_shape, memory_shape, memory_mask_shape):
        self._build_stack(target_in_shape, memory_shape, memory_mask_shape)
        self.output_projection.build((*target_in_shape, self.model_dim))

    def _hidden(self, target_in, memory, memory_mask, training):
        x = self._embed(target_in, training)
        for block in self.blocks:
            x, weights = block(x, memory, memory_mask, training=training)
        return self.final_norm(x), weights

    def call(self, target_in, memory, memory_mask, training=None):
        hidden, _ = self._hidden(target_in, memory, memory_mask, training)
        return self.output_projection(hidden)

    def initial_states(self, memory, memory_mask):
        """Decoding states for `step`: the memory's mask, the position, and per
        block the cross-attention's cache of the memory's keys and values (computed
        once here) and a zero self-attention cache of `max_length` positions."""
        batch = ops.shape(memory)[0]
        memory_caches = [block.cross_attention.compute_cache(memory) for block in self.blocks]
        head_dim = self.model_dim // self.num_heads
        self_caches = [
            ops.zeros((batch, 2, self.num_heads, self.max_length, head_dim), memory.dtype)
            for _ in self.blocks
        ]
        return [memory_mask, ops.zeros((batch,), "int32"), *memory_caches, *self_caches]

    def step(self, tokens, states, training=False):
        """One step with key/value caches: `(logits (N, V), states, alignment (N, T_in))`.

        `O(t)` work for the token at position `t`: its own keys and values are
        computed and written into each block's fixed-size cache; the memory's were
        computed once. The alignment is the last block's attention over the
        memory, averaged over heads.
        """
        memory_mask, position = states[0], states[1]
        layers = len(self.blocks)
        memory_caches, self_caches = states[2 : 2 + layers], states[2 + layers :]
        index = position[0]  # every row decodes the same step
        x = self._embed(ops.expand_dims(ops.cast(tokens, "int32"), 1), training, index)
        new_caches = []
        for block, memory_cache, self_cache in zip(
            self.blocks, memory_caches, self_caches, strict=True
        ):
            x, weights, self_cache = block.step(
                x, memory_cache, memory_mask, self_cache, index, training=training
            )
            new_caches.append(self_cache)
        logits = self.output_projection(self.final_norm(x)[:, 0])
        alignment = ops.mean(ops.cast(weights[:, :, 0], "float32"), 1)
        return logits, [memory_mask, position + 1, *memory_caches, *new_caches], alignment

    def initial_states_recomputed(self, memory, memory_mask):
        """States for `step_recomputed`: the memory, its mask, the token buffer, the
        position."""
        batch = ops.shape(memory)[0]
        return [
            memory,
            memory_mask,
            ops.full((batch, self.max_length), PAD_ID, "int32"),
            ops.zeros((batch,), "int32"),
        ]

    def step_recomputed(self, tokens, states, training=False):
        """One step without caches: the whole causal stack reruns over the buffer of
        the tokens so far (`O(max_length)` positions a token); `step`'s reference."""
        memory, memory_mask, buffer, position = states
        at_position = ops.equal(
            ops.expand_dims(ops.arange(self.max_length, dtype="int32"), 0),
            ops.expand_dims(position, 1),
        )
        buffer = ops.where(at_position, ops.expand_dims(ops.cast(tokens, "int32"), 1), buffer)
        hidden, weights = self._hidden(buffer, memory, memory_mask, training)
        pick = ops.cast(at_position, hidden.dtype)
        hidden_t = ops.einsum("bt,btd->bd", pick, hidden)
        alignment = ops.einsum(
            "bt,bts->bs", ops.cast(pick, "float32"), ops.mean(ops.cast(weights, "float32"), 1)
        )
        logits = self.output_projection(hidden_t)
        return logits, [memory, memory_mask, buffer, position + 1], alignment

    def compute_output_shape(self, target_in_shape, memory_shape, memory_mask_shape):
        return (*target_in_shape, self.vocab_size)

    def get_config(self):
        return {**super().get_config(), "max_length": self.max_length}


@keras.saving.register_keras_serializable(package="keras_attn_models")
class TransformerTranslator(Seq2SeqModel):
    """A Transformer translator: `{"source", "target_in"}` ids → logits, and text → text.

    `TransformerEncoder` and `TransformerDecoder`; `generate` decodes with the same
    layers, with key/value caches. With a `preprocessor` it trains on text,
    translates text and exports a SavedModel that takes text (`Seq2SeqModel`).

    Args:
        source_vocab_size, target_vocab_size: token ids of each side, the four
            specials included (read from `preprocessor` when given).
        max_target_length: the longest target with `[START]` and `[END]` (at least
            2): the decoder's caches hold `max_target_length − 1` positions (read
            from `preprocessor` when given).
        model_dim: `d`, divisible by `num_heads`.
        num_heads, num_layers, feedforward_dim: of every block; `num_layers`
            blocks each side.
        dropout: on embeddings, attention weights and residual branches, in `[0, 1)`.
        word_dropout: the probability of replacing a source token by `[UNK]` while
            training (`WordDropout`), in `[0, 1)`.
        max_wavelength: the sinusoids' longest wavelength (the paper's 10000).
        rope_max_wavelength: if set, every attention also rotates its queries and
            keys by position (RoPE, Su et al. 2021) with this longest wavelength.
        preprocessor: a `TranslatorPreprocessor`, or `None` to train on ids.

    Example:

    >>> from keras_attn.models import TransformerTranslator
    >>> model = TransformerTranslator(30, 20, max_target_length=12)
    >>> model.output.shape
    (None, None, 20)
    """

    MODEL_KIND = "transformer"

    @staticmethod
    def derived_from_preprocessor(preprocessor):
        return {"max_target_length": preprocessor and preprocessor.max_target_length}

    def __init__(self, source_vocab_size: int | None = None,
                 target_vocab_size: int | None = None, max_target_length: int | None = None,
                 model_dim: int = 64, num_heads: int = 4, num_layers: int = 1,
                 feedforward_dim: int = 256, dropout=0.0, max_wavelength=10000.0,
                 rope_max_wavelength=None, word_dropout=0.0, preprocessor=None, **kwargs):
        _validation.check_number("dropout", dropout, low_inclusive=True, high=1.0)
        _validation.check_number("word_dropout", word_dropout, low_inclusive=True, high=1.0)
        _validation.check_number("max_wavelength", max_wavelength)
        _validation.check_number("rope_max_wavelength", rope_max_wavelength, allow_none=True)
        if model_dim % num_heads:
            raise ValueError(
                f"`model_dim` must be divisible by `num_heads`; received model_dim="
                f"{model_dim} and num_heads={num_heads}."
            )
        if max_target_length < 2:
            raise ValueError(
                "`max_target_length` counts [START] and [END], so it must be at least 2; "
                f"received {max_target_length}."
            )
        source = keras.Input((None,), dtype="int32", name="source")
        target_in = keras.Input((None,), dtype="int32", name="target_in")
        sizes = dict(
            model_dim=model_dim,
            num_heads=num_heads,
            num_layers=num_layers,
            feedforward_dim=feedforward_dim,
            dropout=dropout,
            max_wavelength=max_wavelength,
            rope_max_wavelength=rope_max_wavelength,
        )
        encoder = TransformerEncoder(source_vocab_size, name="encoder", **sizes)
        decoder = TransformerDecoder(
            target_vocab_size, max_length=max_target_length - 1, name="decoder", **sizes
        )
        source_ids = WordDropout(word_dropout, name="word_dropout")(source) if word_dropout \
            else source
        memory, mask = encoder(source_ids)
        logits = decoder(target_in, memory, mask)
        kwargs.setdefault("name", "transformer")
        super().__init__({"source": source, "target_in": target_in}, logits, **kwargs)
