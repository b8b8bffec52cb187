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
* `"small-text"`: `"text"` with dropout 0.3, word dropout 0.1 and label smoothing
  0.1, which won on the validation BLEU of 8,000 lines of that corpus.
"""

import copy

_TEXT = {
    "preprocessor": dict(level="subword", lowercase=False, space_punctuation=True,
                         max_vocabulary="auto"),
    "rnn": dict(attention="luong-general", input_feeding=False, embedding_dim=256,
                encoder_units=256, decoder_units=256, attention_units=256,
                attention_layer_size=256, dropout=0.0, word_dropout=0.0),
    "transformer": dict(model_dim=256, feedforward_dim=1024, num_layers=2, dropout=0.0,
                        word_dropout=0.0),
    "compile": dict(label_smoothing=0.0),
}
_SMALL_TEXT_LEVERS = dict(dropout=0.3, word_dropout=0.1)

PRESETS = {
    "dates": {
        "preprocessor": dict(level="char", lowercase=False, space_punctuation=False,
                             max_vocabulary=None),
        "rnn": dict(attention="bahdanau", input_feeding=True, embedding_dim=64,
                    encoder_units=64, decoder_units=128, attention_units=128,
                    attention_layer_size=128, dropout=0.0, word_dropout=0.0),
        "transformer": dict(model_dim=64, feedforward_dim=256, num_layers=1, dropout=0.0,
                            word_dropout=0.0),
        "compile": dict(label_smoothing=0.0),
    },
    "text": _TEXT,
    "small-text": {
        **_TEXT,
        "rnn": {**_TEXT["rnn"], **_SMALL_TEXT_LEVERS},
        "transformer": {**_TEXT["transformer"], **_SMALL_TEXT_LEVERS},
        "compile": dict(label_smoothing=0.1),
    },
}


def preset(name):
    """A copy of the preset `name`: `{"preprocessor", "rnn", "transformer", "compile"}`
    keyword arguments."""
    if name not in PRESETS:
        raise ValueError(f"`preset` must be one of {tuple(PRESETS)}; received {name!r}.")
    return copy.deepcopy(PRESETS[name])
