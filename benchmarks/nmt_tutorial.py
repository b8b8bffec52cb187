"""The model of TensorFlow's "Neural machine translation with attention" tutorial,
re-written in Keras 3 from the tutorial's description, as the real-language
baseline of `benchmarks/translator_real.py`.

What it keeps from the tutorial:

* Text: NFKD, lower case, only `[ a-z.?!,¿]` kept, spaces around `.?!,¿`,
  `[START] … [END]`, split on whitespace; vocabularies of the 5,000 most
  frequent tokens (with `''` for padding and `[UNK]`), as `TextVectorization`
  builds them.
* Model (`units=256`): an encoder of `Embedding(mask_zero=True)` and a
  bidirectional GRU whose directions are summed; a decoder of
  `Embedding(mask_zero=True)`, a GRU that starts from zeros, cross-attention
  (`MultiHeadAttention(num_heads=1, key_dim=units)`, a residual `Add` and
  `LayerNormalization`) and a `Dense` over the vocabulary.
* Training: Adam at Keras's default rate, the cross-entropy averaged over
  real target tokens, batches of shuffled pairs padded to their longest one.
* Decoding: greedy (the tutorial's `translate` at temperature 0), here also beam
  search, from `keras_attn.decoding`.
"""

import re
import unicodedata
from collections import Counter

import keras
import numpy as np
from keras import layers, ops

from keras_attn import decoding

UNITS = 256
MAX_TOKENS = 5000
PAD_ID, UNK_ID = 0, 1
_DROP = re.compile(r"[^ a-z.?!,¿]")
_PUNCTUATION = re.compile(r"([.?!,¿])")


def standardize(text):
    """The tutorial's `tf_lower_and_split_punct`, without `[START]`/`[END]`."""
    text = unicodedata.normalize("NFKD", text).lower()
    text = _PUNCTUATION.sub(r" \1 ", _DROP.sub("", text))
    return text.strip()


class TutorialVocabulary:
    """`TextVectorization(max_tokens=5000)`'s vocabulary: `''`, `[UNK]`, then the
    most frequent tokens (with `[START]` and `[END]`) in order of frequency."""

    def __init__(self, texts, max_tokens=MAX_TOKENS):
        counts = Counter(t for text in texts for t in ["[START]", *text.split(), "[END]"])
        ranked = sorted(counts, key=lambda t: (-counts[t], t))
        self.tokens = ["", "[UNK]", *ranked[: max_tokens - 2]]
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.start, self.end = self.index["[START]"], self.index["[END]"]

    def __len__(self):
        return len(self.tokens)

    def encode(self, text):
        return [self.index.get(t, UNK_ID) for t in text.split()]

    def decode(self, ids):
        words = []
        for i in ids:
            if int(i) == self.end:
                break
            if int(i) != PAD_ID:
                words.append(self.tokens[int(i)])
        return " ".join(words)


class Encoder(layers.Layer):
    def __init__(self, vocab_size, units=UNITS, **kwargs):
        super().__init__(**kwargs)
        self.embedding = layers.Embedding(vocab_size, units, mask_zero=True)
        self.rnn = layers.Bidirectional(
            layers.GRU(units, return_sequences=True, recurrent_initializer="glorot_uniform"),
            merge_mode="sum",
        )

    def call(self, source):
        return self.rnn(self.embedding(source)), ops.not_equal(source, PAD_ID)


class CrossAttention(layers.Layer):
    def __init__(self, units=UNITS, **kwargs):
        super().__init__(**kwargs)
        self.attention = layers.MultiHeadAttention(num_heads=1, key_dim=units)
        self.norm = layers.LayerNormalization()
        self.supports_masking = True  # the decoder's padding mask passes through

    def call(self, x, context, context_mask):
        attended, weights = self.attention(
            query=x, value=context, attention_mask=ops.expand_dims(context_mask, 1),
            return_attention_scores=True,
        )
        return self.norm(x + attended), weights


class Decoder(layers.Layer):
    def __init__(self, vocab_size, units=UNITS, **kwargs):
        super().__init__(**kwargs)
        self.embedding = layers.Embedding(vocab_size, units, mask_zero=True)
        self.rnn = layers.GRU(units, return_sequences=True, return_state=True,
                              recurrent_initializer="glorot_uniform")
        self.attention = CrossAttention(units)
        self.output_layer = layers.Dense(vocab_size)

    def call(self, target_in, context, context_mask):
        x, _ = self.rnn(self.embedding(target_in))
        x, _ = self.attention(x, context, context_mask)
        return self.output_layer(x)

    def step(self, tokens, states):
        """One greedy/beam step: `(logits, states, alignment)`."""
        hidden, context, context_mask = states
        # The embedding's table directly: a step has no padding mask to carry.
        embedded = ops.take(self.embedding.embeddings, tokens, axis=0)
        output, new_hidden = self.rnn.cell(embedded, hidden)
        if isinstance(new_hidden, (list, tuple)):
            new_hidden = new_hidden[0]
        x, weights = self.attention(ops.expand_dims(output, 1), context, context_mask)
        logits = self.output_layer(x[:, 0])
        return logits, [new_hidden, context, context_mask], weights[:, 0, 0]


def build(source_vocab_size, target_vocab_size, units=UNITS):
    source = keras.Input((None,), dtype="int32", name="source")
    target_in = keras.Input((None,), dtype="int32", name="target_in")
    encoder = Encoder(source_vocab_size, units, name="encoder")
    decoder = Decoder(target_vocab_size, units, name="decoder")
    context, mask = encoder(source)
    logits = decoder(target_in, context, mask)
    model = keras.Model({"source": source, "target_in": target_in}, logits, name="tutorial")
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"
        ),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="token_accuracy")],
    )
    return model


class Batches(keras.utils.PyDataset):
    """The tutorial's batches: shuffled pairs, each batch padded to its longest."""

    def __init__(self, sources, targets, start, end, batch_size, seed=0, **kwargs):
        super().__init__(**kwargs)
        self.sources, self.targets = sources, targets
        self.start, self.end, self.batch_size, self.seed = start, end, batch_size, seed
        self._epoch = 0
        self._order = np.random.default_rng(seed).permutation(len(sources))

    def __len__(self):
        return -(-len(self.sources) // self.batch_size)

    def on_epoch_end(self):
        self._epoch += 1
        self._order = np.random.default_rng(self.seed + self._epoch).permutation(
            len(self.sources))

    def __getitem__(self, index):
        rows = self._order[index * self.batch_size : (index + 1) * self.batch_size]
        src_len = max(len(self.sources[i]) for i in rows)
        tgt_len = max(len(self.targets[i]) for i in rows) + 1
        source = np.zeros((len(rows), src_len), "int32")
        target_in = np.zeros((len(rows), tgt_len), "int32")
        target_out = np.zeros((len(rows), tgt_len), "int32")
        for row, i in enumerate(rows):
            ids, out = self.sources[i], self.targets[i]
            source[row, : len(ids)] = ids
            target_in[row, : len(out) + 1] = [self.start, *out]
            target_out[row, : len(out) + 1] = [*out, self.end]
        return ({"source": source, "target_in": target_in}, target_out,
                (target_out != PAD_ID).astype("float32"))


def translate(model, source_ids, target_vocab, max_length=50, beam_width=1):
    """Greedy (the tutorial's) or beam-search translations of padded source ids."""
    encoder, decoder = model.get_layer("encoder"), model.get_layer("decoder")
    context, mask = encoder(ops.convert_to_tensor(source_ids, "int32"))
    batch = ops.shape(context)[0]
    states = [ops.zeros((batch, decoder.rnn.cell.units)), context, mask]
    common = dict(initial_states=states, batch_size=batch, max_length=max_length,
                  start_token=target_vocab.start, end_token=target_vocab.end,
                  alignment_length=ops.shape(context)[1], pad_token=PAD_ID)
    if beam_width == 1:
        out = decoding.greedy_decode(decoder.step, **common)
    else:
        out = decoding.beam_search(decoder.step, beam_width=beam_width, source_mask=mask,
                                   **common)
    return [target_vocab.decode(row) for row in ops.convert_to_numpy(out["tokens"])]
