"""`keras-attn predict` for translator exports: translations and the alignment plot."""

import os

import tensorflow as tf

from keras_attn.training.plotting import pyplot
from keras_attn.training.tasks.translator.parallel import normalize_text
from keras_attn.training.text import Vocabulary


def translate(version_dir, meta, texts):
    """Runs the export's `serving_default` with TensorFlow alone; prints
    `text<TAB>translation<TAB>score` lines and returns what `plot_alignment` draws
    for the first text: its tokens, the translation's tokens and the alignment."""
    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    out = serve(text=tf.constant(texts))
    translations = [t.decode("utf-8") for t in out["translation"].numpy()]
    for text, translation, score in zip(texts, translations, out["score"].numpy(), strict=True):
        print(f"{text}\t{translation}\t{score:.4f}")
    extra = os.path.join(version_dir, "assets.extra")
    return (texts[0],
            tokens(texts[0], Vocabulary.load(os.path.join(extra, "source_vocab.json")), meta),
            tokens(translations[0], Vocabulary.load(os.path.join(extra, "target_vocab.json")),
                   meta),
            out["alignment"].numpy()[0])


def tokens(text, vocab, meta):
    """The tokens the model saw for `text` (as the graph tokenises it), as strings."""
    preprocess = meta.settings["preprocess"]
    text = normalize_text(text, unicode_form=None, lowercase=preprocess["lowercase"],
                          space_punctuation=preprocess["space_punctuation"])
    return [vocab.tokens[i] for i in vocab.encode(text, meta.settings["max_source_length"])]


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
