"""The explore page of translator exports: a text in, its translation and the
alignment (source × output tokens) out."""

import os

import tensorflow as tf

from keras_attn.models.text import END
from keras_attn.training import charts
from keras_attn.training.errors import UsageError
from keras_attn.training.export import loaded_signature
from keras_attn.training.tasks.translator.predict import export_preprocessor


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
        raise UsageError(f"`text` must be a string; received {type(text).__name__}")
    out = loaded_signature(version_dir)(text=tf.constant([text]))
    translation = out["translation"].numpy()[0].decode("utf-8")
    score = float(out["score"].numpy()[0])
    if not text.strip():
        return {"answer": "(empty input: an empty translation)", "figures": []}
    preprocessor = export_preprocessor(version_dir, meta)
    source = preprocessor.source_tokens(text)
    target = preprocessor.target_tokens(translation)
    alignment = out["alignment"].numpy()[0]
    rows = min(len(target) + 1, alignment.shape[0])  # the output tokens, then [END]
    labels = [f"{i + 1}. {t}" for i, t in enumerate([*target, END][:rows])]
    columns = [f"{j + 1}. {t}" for j, t in enumerate(source)]
    figure = charts.heatmap(alignment[:rows, : len(source)], columns, labels,
                            "where each output token looked", "source tokens", "output tokens",
                            zmax=1.0)
    beam = int(meta.settings.get("beam_width", 1))
    decoder = "greedy" if beam == 1 else f"beam search, width {beam}"
    return {"answer": f"{translation}\n(score {score:.4f}; {decoder}, the export's decoder)",
            "figures": [figure]}
