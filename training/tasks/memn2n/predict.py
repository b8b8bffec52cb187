"""`keras-attn predict` for the bAbI exports: an answer, and the memory network's
hop attention."""

import numpy as np
import tensorflow as tf

from keras_attn.training.plotting import pyplot


def _story_sentences(args):
    sentences = list(args.story or [])
    if args.story_file:
        with open(args.story_file, encoding="utf-8") as f:
            sentences = [line.strip() for line in f if line.strip()]
    return [s.strip() for s in sentences if s.strip()]


def _serve(version_dir, sentences, question):
    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    out = serve(story=tf.constant(["\n".join(sentences)]), question=tf.constant([question]))
    return out, out["answer"].numpy()[0].decode("utf-8")


def answer_with_dnc(version_dir, meta, args):
    """Answers one bAbI-style question with a `dnc-babi` export; prints the answer."""
    out, answer = _serve(version_dir, _story_sentences(args), args.question)
    print(f"{args.question} → {answer} (probability {out['probability'].numpy()[0]:.3f})")
    return answer


def answer_question(version_dir, meta, args):
    """Answers one bAbI-style question with the export's `serving_default`; prints
    the answer and, per hop, the attention weights over the kept sentences (each
    hop's weights sum to 1). Returns what `plot_hop_attention` draws."""
    sentences = _story_sentences(args)
    memory = int(meta.settings["memory_size"])
    out, answer = _serve(version_dir, sentences, args.question)
    kept = sentences[::-1][:memory]  # most recent first, as the memory holds them
    attention = out["hop_attention"].numpy()[0][:, : len(kept)]  # (hops, kept)
    print(f"{args.question} → {answer} (probability {out['probability'].numpy()[0]:.3f})")
    if len(sentences) > memory:
        print(f"  the story has {len(sentences)} sentences; the memory keeps the {memory} "
              "most recent")
    hops = attention.shape[0]
    print("  attention weights per hop (most recent sentence first; each hop sums to 1):")
    print("  " + " ".join(f"hop {k + 1:<3}" for k in range(hops)) + "  sentence")
    for slot, sentence in enumerate(kept):
        print("  " + " ".join(f"{attention[k, slot]:7.3f}" for k in range(hops)) + f"  {sentence}")
    if not kept:
        return None
    return kept[::-1], attention[:, ::-1], args.question, answer


def plot_hop_attention(sentences, attention, question, answer, path):
    """Heatmap: story sentences (oldest first) down, hops across."""
    plt = pyplot("".join(sentences) + question + answer)
    fig, ax = plt.subplots(figsize=(2.5 + 0.8 * attention.shape[0],
                                    max(2.5, 0.35 * len(sentences) + 1.2)))
    image = ax.imshow(np.asarray(attention).T, cmap="viridis", aspect="auto", vmin=0.0)
    ax.set_xticks(range(attention.shape[0]), [f"hop {k + 1}" for k in range(attention.shape[0])])
    ax.set_yticks(range(len(sentences)), sentences, fontsize=8)
    ax.set_title(f"{question} → {answer}", fontsize=9)
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"attention saved to {path}")
