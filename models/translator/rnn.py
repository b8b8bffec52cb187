"""Seq2seq translator: bidirectional RNN encoder, attention-wrapped RNN decoder.

Bahdanau et al. 2015 / Luong et al. 2015. The training model takes `source` ids
and teacher-forced `target_in` ids (`[START] y_1 … y_n`) and returns logits for
`target_out` (`y_1 … y_n [END]`); `generate` decodes greedily or with beam search.
Token ids follow `models.text`: `[PAD]=0 [UNK]=1 [START]=2 [END]=3`.
"""

import keras
from keras import ops

import keras_attn
from keras_attn import _validation
from keras_attn.choices import RNN_CELLS, TRANSLATOR_ATTENTIONS
from keras_attn.models.text import PAD_ID
from keras_attn.models.translator.seq2seq import Seq2SeqModel
from keras_attn.models.translator.tied_output import TiedOutput
from keras_attn.models.translator.word_dropout import WordDropout


def _rnn_layer(kind, units, **kwargs):
    return (keras.layers.GRU if kind == "gru" else keras.layers.LSTM)(units, **kwargs)


def _rnn_cell(kind, units, dropout):
    cls = keras.layers.GRUCell if kind == "gru" else keras.layers.LSTMCell
    return cls(units, dropout=dropout, name=f"{kind}_cell")


def make_attention(kind, units):
    if kind == "bahdanau":
        return keras_attn.BahdanauAttention(units, name="attention")
    if kind == "bahdanau-monotonic":
        # Raffel et al.'s additive energy; the alignment only moves forward.
        return keras_attn.MonotonicAttention(score="additive", units=units, name="attention")
    score = kind.split("-", 1)[1]
    return keras_attn.LuongAttention(
        score=score, units=units if score == "concat" else None, scale=kind != "luong-dot",
        name="attention"
    )


@keras.saving.register_keras_serializable(package="keras_attn_models")
class TranslatorEncoder(keras.layers.Layer):
    """Embedding + bidirectional GRU/LSTM; returns the memory, its mask and the
    decoder's initial cell state(s) (`tanh` projections of the final states).

    `embedding`: an `Embedding` layer to read with instead of one of its own (the
    decoder's, when a translator ties both sides' embeddings); the model that
    shares it passes it again when it is rebuilt, so it is not in the config.
    """

    def __init__(
        self, vocab_size, embedding_dim, units, decoder_units, rnn="gru", dropout=0.0,
        embedding=None, **kwargs
    ):
        super().__init__(**kwargs)
        self.vocab_size, self.embedding_dim, self.units = vocab_size, embedding_dim, units
        self.decoder_units, self.rnn_kind, self.dropout = decoder_units, rnn, dropout
        self.embedding = embedding or keras.layers.Embedding(vocab_size, embedding_dim,
                                                             name="embedding")
        self.rnn = keras.layers.Bidirectional(
            _rnn_layer(rnn, units, return_sequences=True, return_state=True, dropout=dropout),
            name="bidirectional",
        )
        n_states = 1 if rnn == "gru" else 2
        self.bridges = [
            keras.layers.Dense(decoder_units, activation="tanh", name=f"bridge_{i}")
            for i in range(n_states)
        ]

    def build(self, source_shape):
        if not self.embedding.built:  # it may be the decoder's, shared (tied embeddings)
            self.embedding.build(source_shape)
        self.rnn.build((*source_shape, self.embedding_dim))
        for bridge in self.bridges:
            bridge.build((source_shape[0], 2 * self.units))

    def call(self, source, training=None):
        mask = ops.not_equal(source, PAD_ID)
        outputs = self.rnn(self.embedding(source), mask=mask, training=training)
        memory, finals = outputs[0], outputs[1:]
        half = len(finals) // 2
        forward, backward = finals[:half], finals[half:]
        cell_states = [
            bridge(ops.concatenate([f, b], axis=-1))
            for bridge, f, b in zip(self.bridges, forward, backward, strict=True)
        ]
        return memory, mask, cell_states

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "embedding_dim": self.embedding_dim,
            "units": self.units,
            "decoder_units": self.decoder_units,
            "rnn": self.rnn_kind,
            "dropout": self.dropout,
        }


@keras.saving.register_keras_serializable(package="keras_attn_models")
class TranslatorDecoder(keras.layers.Layer):
    """Target embedding, `AttentionWrapperCell` in `keras.layers.RNN`, output logits.

    `call` runs teacher-forced over `target_in`; `step` is one decoding step. With
    `tie_embeddings` the logits are `P(ã_t) Eᵀ + b` (`TiedOutput`): the target
    embedding `E` is the output layer too, after a linear map `P` to its size.
    """

    def __init__(
        self,
        vocab_size,
        embedding_dim,
        units,
        memory_size,
        attention="bahdanau",
        attention_units=128,
        attention_layer_size=128,
        rnn="gru",
        input_feeding=True,
        dropout=0.0,
        tie_embeddings=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size, self.embedding_dim, self.units = vocab_size, embedding_dim, units
        self.tie_embeddings = bool(tie_embeddings)
        self.memory_size, self.attention_kind = memory_size, attention
        self.attention_units, self.attention_layer_size = attention_units, attention_layer_size
        self.rnn_kind, self.input_feeding, self.dropout = rnn, input_feeding, dropout
        self.embedding = keras.layers.Embedding(vocab_size, embedding_dim, name="embedding")
        self.cell = keras_attn.AttentionWrapperCell(
            _rnn_cell(rnn, units, dropout),
            make_attention(attention, attention_units),
            memory_size=memory_size,
            attention_layer_size=attention_layer_size,
            input_feeding=input_feeding,
            name="attention_cell",
        )
        # No target mask: padded target steps come after the real ones and only
        # feed the (masked) loss, and a mask would `where` every memory state.
        self.rnn = keras.layers.RNN(self.cell, return_sequences=True, name="rnn")
        # Logits in float32 under mixed precision, for a stable softmax.
        if self.tie_embeddings:
            self.output_hidden = keras.layers.Dense(embedding_dim, name="output_hidden")
            self.output_projection = TiedOutput(vocab_size, dtype="float32", name="logits")
        else:
            self.output_projection = keras.layers.Dense(vocab_size, dtype="float32",
                                                        name="logits")

    def build(self, target_in_shape, memory_shape, source_mask_shape, cell_states_shape):
        if not self.embedding.built:  # it may be the encoder's, shared
            self.embedding.build(target_in_shape)
        self.cell.build((target_in_shape[0], self.embedding_dim))
        if self.tie_embeddings:
            self.output_hidden.build((target_in_shape[0], self.cell.output_size))
            self.output_projection.build((target_in_shape[0], self.embedding_dim))
        else:
            self.output_projection.build((target_in_shape[0], self.cell.output_size))

    def logits(self, outputs):
        """The output layer: `(…, output size)` decoder outputs → `(…, V)` logits."""
        if self.tie_embeddings:
            return self.output_projection(self.output_hidden(outputs), self.embedding.embeddings)
        return self.output_projection(outputs)

    def initial_states(self, memory, source_mask, cell_states):
        return self.cell.get_initial_state(memory, source_mask, list(cell_states))

    def call(self, target_in, memory, source_mask, cell_states, training=None):
        states = self.initial_states(memory, source_mask, cell_states)
        embedded = self.embedding(target_in)
        if self.cell.parallel_over_time:
            outputs = self.cell.call_sequence(embedded, states, training=training)
        else:
            outputs = self.rnn(embedded, initial_state=states, training=training)
        return self.logits(outputs)

    def step(self, tokens, states, training=False):
        """One step: `(logits (N, V), states, alignment (N, T_in))`."""
        outputs, states = self.cell(self.embedding(tokens), states, training=training)
        alignment = states[self.cell.num_cell_states + 1]
        return self.logits(outputs), states, alignment

    def compute_output_shape(
        self, target_in_shape, memory_shape, source_mask_shape, cell_states_shape
    ):
        return (*target_in_shape, self.vocab_size)

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "embedding_dim": self.embedding_dim,
            "units": self.units,
            "memory_size": self.memory_size,
            "attention": self.attention_kind,
            "attention_units": self.attention_units,
            "attention_layer_size": self.attention_layer_size,
            "rnn": self.rnn_kind,
            "input_feeding": self.input_feeding,
            "dropout": self.dropout,
            "tie_embeddings": self.tie_embeddings,
        }


@keras.saving.register_keras_serializable(package="keras_attn_models")
class Translator(Seq2SeqModel):
    """An RNN translator: `{"source", "target_in"}` ids → logits, and text → text.

    A bidirectional RNN encoder (`TranslatorEncoder`) and an attention-wrapped RNN
    decoder (`TranslatorDecoder`); `generate` decodes with the same layers. With a
    `preprocessor` it trains on text (`fit(x=sources, y=targets)`), translates text
    and exports a SavedModel that takes text (`Seq2SeqModel`).

    Args:
        source_vocab_size, target_vocab_size: token ids of each side, the four
            specials included (read from `preprocessor` when given).
        attention: one of `choices.TRANSLATOR_ATTENTIONS`; `"luong-dot"` scores
            `h_tᵀ h̄_s`, so `decoder_units` must be `2 × encoder_units`.
        rnn: `"gru"` or `"lstm"`.
        embedding_dim: both sides' token embeddings.
        encoder_units: per direction: the memory has `2 × encoder_units` features.
        decoder_units, attention_units, attention_layer_size: the decoder's cell,
            the attention's scoring layer, the attentional vector `ã_t`.
        input_feeding: feed `ã_{t−1}` to the decoder with the next token.
        dropout: on the RNNs' inputs, in `[0, 1)`.
        word_dropout: the probability of replacing a source token by `[UNK]` while
            training (`WordDropout`), in `[0, 1)`.
        tie_embeddings: the target embedding is the output layer too (`TiedOutput`,
            Press & Wolf 2017); with a preprocessor whose two sides share one
            vocabulary (`shared_vocabulary=True`), the source embedding is that same
            matrix (three-way tying).
        preprocessor: a `TranslatorPreprocessor`, or `None` to train on ids.

    Example:

    >>> from keras_attn.models import Translator
    >>> model = Translator(source_vocab_size=30, target_vocab_size=20)
    >>> model.output.shape
    (None, None, 20)
    """

    MODEL_KIND = "rnn"

    def __init__(self, source_vocab_size: int | None = None,
                 target_vocab_size: int | None = None, attention="bahdanau", rnn="gru",
                 embedding_dim: int = 64, encoder_units: int = 64, decoder_units: int = 128,
                 attention_units: int = 128, attention_layer_size: int = 128,
                 input_feeding=True, dropout=0.0, word_dropout=0.0, tie_embeddings=False,
                 preprocessor=None, **kwargs):
        _validation.check_number("dropout", dropout, low_inclusive=True, high=1.0)
        _validation.check_number("word_dropout", word_dropout, low_inclusive=True, high=1.0)
        if attention not in TRANSLATOR_ATTENTIONS:
            raise ValueError(
                f"`attention` must be one of {TRANSLATOR_ATTENTIONS}; received {attention!r}."
            )
        if rnn not in RNN_CELLS:
            raise ValueError(f"`rnn` must be one of {RNN_CELLS}; received {rnn!r}.")
        if attention == "luong-dot" and decoder_units != 2 * encoder_units:
            raise ValueError(
                "`luong-dot` scores h_tᵀ h̄_s, so `decoder_units` must equal 2 × "
                f"`encoder_units`; received {decoder_units} and {encoder_units}."
            )
        source = keras.Input((None,), dtype="int32", name="source")
        target_in = keras.Input((None,), dtype="int32", name="target_in")
        decoder = TranslatorDecoder(
            target_vocab_size,
            embedding_dim,
            decoder_units,
            memory_size=2 * encoder_units,
            attention=attention,
            attention_units=attention_units,
            attention_layer_size=attention_layer_size,
            rnn=rnn,
            input_feeding=input_feeding,
            dropout=dropout,
            tie_embeddings=tie_embeddings,
            name="decoder",
        )
        three_way = tie_embeddings and getattr(preprocessor, "shared_vocabulary", False)
        encoder = TranslatorEncoder(source_vocab_size, embedding_dim, encoder_units,
                                    decoder_units, rnn=rnn, dropout=dropout,
                                    embedding=decoder.embedding if three_way else None,
                                    name="encoder")
        source_ids = WordDropout(word_dropout, name="word_dropout")(source) if word_dropout \
            else source
        memory, mask, cell_states = encoder(source_ids)
        logits = decoder(target_in, memory, mask, cell_states)
        kwargs.setdefault("name", "translator")
        super().__init__({"source": source, "target_in": target_in}, logits, **kwargs)
