"""The explore page of the bAbI exports (memory network and DNC): a story and a
question in, the answer, its probability and (memory network) each hop's attention
over the story's sentences out."""

import os

import tensorflow as tf

from keras_attn.models.memn2n.preprocessor import normalize
from keras_attn.training import charts
from keras_attn.training.errors import UsageError
from keras_attn.training.export import loaded_signature
from keras_attn.training.tasks.memn2n import babi

EXAMPLE = {"story": "Mary went to the kitchen.\nJohn moved to the garden.",
           "question": "Where is Mary?"}


def held_out_question(extra_dir, index=0):
    """`{"story", "question"}` of one of the run's held-out questions (`index`
    wraps around), for the form's default and its "random" button."""
    try:
        files = babi.find_task_files(os.path.join(extra_dir, "test"), split="test")
        questions = [q for entry in files.values() for q in babi.load_babi_file(entry["test"])]
    except (OSError, ValueError):
        questions = []
    if not questions:
        return dict(EXAMPLE)
    q = questions[index % len(questions)]
    return {"story": "\n".join(q.story), "question": q.question}


def explore(version_dir, meta, inputs):
    story, question = inputs.get("story", ""), inputs.get("question", "")
    if not isinstance(story, str) or not isinstance(question, str):
        raise UsageError("`story` and `question` must be strings")
    out = loaded_signature(version_dir)(story=tf.constant([story]),
                                        question=tf.constant([question]))
    answer = out["answer"].numpy()[0].decode("utf-8")
    probability = float(out["probability"].numpy()[0])
    result = {"answer": f"{question.strip() or '(no question)'} → {answer} "
                        f"(probability {probability:.3f})", "figures": []}
    if "hop_attention" not in out:
        result["notes"] = ["The DNC's export returns the answer and its probability; its "
                           "read weightings are not among its outputs."]
        return result
    sentences = [s.strip() for s in story.split("\n") if normalize(s)]
    memory = int(meta.settings["memory_size"])
    kept = sentences[::-1][:memory]  # most recent first, as the memory holds them
    attention = out["hop_attention"].numpy()[0][:, : len(kept)]
    labels = [f"{len(kept) - i}. {s[:40]}" for i, s in enumerate(kept)][::-1]
    groups = [(f"hop {k + 1}", attention[k][::-1]) for k in range(attention.shape[0])]
    if kept:
        result["figures"].append(charts.bars(groups, labels, "attention over the story's "
                                             "sentences, per hop", "weight"))
    if len(sentences) > memory:
        result["notes"] = [f"The story has {len(sentences)} sentences; the memory keeps the "
                           f"{memory} most recent."]
    return result
