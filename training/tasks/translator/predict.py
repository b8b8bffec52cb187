"""`keras-attn predict` for translator exports: translations and the alignment plot."""

import os

import tensorflow as tf

from keras_attn.models.text import Vocabulary
from keras_attn.training.plotting import pyplot
from keras_attn.training.tasks.translator.data import run_preprocessor


def export_preprocessor(version_dir, meta):
    """The export's `TranslatorPreprocessor`, from `assets.extra/`'s vocabularies."""
    extra = os.path.join(version_dir, "assets.extra")
    return run_preprocessor(Vocabulary.load(os.path.join(extra, "source_vocab.json")),
                            Vocabulary.load(os.path.join(extra, "target_vocab.json")),
                            meta.settings)


def translate(version_dir, meta, texts):
    """Runs the export's `serving_default` with TensorFlow alone; prints
    `text<TAB>translation<TAB>score` lines and returns what `plot_alignment` draws
    for the first text: its tokens, the translation's tokens and the alignment."""
    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    out = serve(text=tf.constant(texts))
    translations = [t.decode("utf-8") for t in out["translation"].numpy()]
    for text, translation, score in zip(texts, translations, out["score"].numpy(), strict=True):
        print(f"{text}\t{translation}\t{score:.4f}")
    preprocessor = export_preprocessor(version_dir, meta)
    return (texts[0], preprocessor.source_tokens(texts[0]),
            preprocessor.target_tokens(translations[0]), out["alignment"].numpy()[0])


def plot_alignment(source, source_tokens, output_tokens, alignment, path):
    """Heatmap: source tokens across, output tokens (and [END]) down."""
    plt = pyplot("".join(source_tokens + output_tokens))
    output_tokens = list(output_tokens) + ["[END]"]
    weights = alignment[: len(output_tokens), : len(source_tokens)]
    fig, ax = plt.subplots(
        figsize=(max(4, 0.35 * len(source_tokens)), max(3, 0.35 * len(output_tokens)))
    )
    ax.imshow(weights, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(source_tokens)), source_tokens, fontsize=8)
    ax.set_yticks(range(len(output_tokens)), output_tokens, fontsize=8)
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"alignment of {source!r} saved to {path}")
