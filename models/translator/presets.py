"""The translators' named configurations: keras-hub's presets, without weights.

A preset names the preprocessor's rules, each model's sizes and the loss's label
smoothing that one kind of data trains well with; `keras-attn train translator`'s
profiles are these presets (plus its training budget). Use one from a script:

    preprocessor = TranslatorPreprocessor.from_preset("text", sources, targets)
    model = Translator.from_preset("text", preprocessor=preprocessor)
    model.compile(**preset("text")["compile"])

* `"dates"`: the built-in dates (characters, a small model that reaches 100 % in a
  minute);
* `"text"`: real sentences (cased subwords, Luong's general score without input
  feeding, 256 units, two Transformer blocks a side: what beat TensorFlow's tutorial
  model on its Spanish–English corpus, docs/results);
* `"small-text"`: `"text"` with dropout 0.3, word dropout 0.1, label smoothing 0.1,
  one vocabulary of both sides, (for the RNN) tied embeddings and subword dropout 0.1,
  which won on the validation BLEU of 8,000 lines of that corpus.
"""

import copy


def _preset(*, level, space_punctuation, max_vocabulary, attention, input_feeding,
            embedding_dim, units, decoder_units, model_dim, feedforward_dim, num_layers,
            dropout=0.0, word_dropout=0.0, label_smoothing=0.0, shared_vocabulary=False,
            tie_embeddings=False, subword_dropout=0.0):
    """One preset's keyword arguments for the preprocessor, each model and `compile`."""
    regularisation = dict(dropout=dropout, word_dropout=word_dropout)
    return {
        "preprocessor": dict(level=level, lowercase=False, space_punctuation=space_punctuation,
                             max_vocabulary=max_vocabulary,
                             shared_vocabulary=shared_vocabulary,
                             subword_dropout=subword_dropout),
        "rnn": dict(attention=attention, input_feeding=input_feeding,
                    embedding_dim=embedding_dim, encoder_units=units,
                    decoder_units=decoder_units, attention_units=decoder_units,
                    attention_layer_size=decoder_units, tie_embeddings=tie_embeddings,
                    **regularisation),
        "transformer": dict(model_dim=model_dim, feedforward_dim=feedforward_dim,
                            num_layers=num_layers, **regularisation),
        "compile": dict(label_smoothing=label_smoothing),
    }


_TEXT = dict(level="subword", space_punctuation=True, max_vocabulary="auto",
             attention="luong-general", input_feeding=False, embedding_dim=256, units=256,
             decoder_units=256, model_dim=256, feedforward_dim=1024, num_layers=2)
PRESETS = {
    "dates": _preset(level="char", space_punctuation=False, max_vocabulary=None,
                     attention="bahdanau", input_feeding=True, embedding_dim=64, units=64,
                     decoder_units=128, model_dim=64, feedforward_dim=256, num_layers=1),
    "text": _preset(**_TEXT),
    "small-text": _preset(**_TEXT, dropout=0.3, word_dropout=0.1, label_smoothing=0.1,
                          shared_vocabulary=True, tie_embeddings=True, subword_dropout=0.1),
}


def preset(name):
    """A copy of the preset `name`: `{"preprocessor", "rnn", "transformer", "compile"}`
    keyword arguments."""
    if name not in PRESETS:
        raise ValueError(f"`preset` must be one of {tuple(PRESETS)}; received {name!r}.")
    return copy.deepcopy(PRESETS[name])
