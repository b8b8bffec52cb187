"""The explore page of translator exports: a text in, its translation and the
alignment (source × output tokens) out."""

import os

import tensorflow as tf

from keras_attn.training import charts
from keras_attn.training.export import loaded_signature
from keras_attn.training.tasks.translator.parallel import normalize_text
from keras_attn.training.text import END, Vocabulary


def _prepared(text, preprocess):
    """The text as training (and the export's graph) prepares it for cutting."""
    if preprocess.get("collapse_whitespace"):
        return normalize_text(text, None, preprocess.get("lowercase", False),
                              preprocess.get("space_punctuation", False))
    return text.lower() if preprocess.get("lowercase") else text


def _tokens(vocab, text, limit=None):
    return [vocab.tokens[i] for i in vocab.encode(text, limit)]


def held_out_sources(extra_dir):
    """The source sentences of the run's held-out split (`assets.extra/test.tsv`),
    for the form's default and its "random" button."""
    try:
        with open(os.path.join(extra_dir, "test.tsv"), encoding="utf-8") as f:
            return [line.split("\t")[0].strip() for line in f if line.strip()]
    except OSError:
        return []


def explore(version_dir, meta, inputs):
    text = inputs.get("text", "")
    if not isinstance(text, str):
        raise ValueError(f"`text` must be a string; received {type(text).__name__}")
    out = loaded_signature(version_dir)(text=tf.constant([text]))
    translation = out["translation"].numpy()[0].decode("utf-8")
    score = float(out["score"].numpy()[0])
    if not text.strip():
        return {"answer": "(empty input: an empty translation)", "figures": []}
    extra = os.path.join(version_dir, "assets.extra")
    settings, preprocess = meta.settings, meta.settings["preprocess"]
    source = _tokens(Vocabulary.load(os.path.join(extra, "source_vocab.json")),
                     _prepared(text, preprocess), int(settings["max_source_length"]))
    target = _tokens(Vocabulary.load(os.path.join(extra, "target_vocab.json")),
                     _prepared(translation, {**preprocess, "lowercase": False}))
    alignment = out["alignment"].numpy()[0]
    rows = min(len(target) + 1, alignment.shape[0])  # the output tokens, then [END]
    labels = [f"{i + 1}. {t}" for i, t in enumerate([*target, END][:rows])]
    columns = [f"{j + 1}. {t}" for j, t in enumerate(source)]
    figure = charts.heatmap(alignment[:rows, : len(source)], columns, labels,
                            "where each output token looked", "source tokens", "output tokens",
                            zmax=1.0)
    beam = int(settings.get("beam_width", 1))
    decoder = "greedy" if beam == 1 else f"beam search, width {beam}"
    return {"answer": f"{translation}\n(score {score:.4f}; {decoder}, the export's decoder)",
            "figures": [figure]}
