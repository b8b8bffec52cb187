"""The bAbI question-answering models' served SavedModel (TensorFlow backend): the
memory network's and the DNC's.

`serving_default(story, question)`: each example's sentences separated by newlines,
oldest first, and its question, both strings of shape `[batch]`, turned into ids in the
graph by the model's `MemN2NPreprocessor` (its graph methods, the only code here
that touches strings); returns `answer` (cased as `preprocessor.cased_answer`
writes it; empty for an empty or blank question), its `probability` and
`hop_attention`.
"""

import json
import os

import keras

from keras_attn.models.configured import check_export_backend, write_export_meta


def serving_archive(reader, preprocessor):
    """A bAbI QA model's `keras.export.ExportArchive` with its preprocessor (a
    `StoryPreprocessor`): `reader` is the model (the DNC's), or returns its hops'
    attention too (`with_attention(model)`, the memory network's).

    `serving_default(story, question)`: `story` holds each example's sentences
    separated by newlines, oldest first; returns `answer` (the most probable of the
    model's candidates), its `probability` and, for the memory network,
    `hop_attention` `[B, hops, memory_size]` over the kept sentences, most recent
    first.
    """
    check_export_backend()

    def serve(story, question):
        story, question, ids = preprocessor.graph_inputs(story, question)
        outputs = reader(ids)
        if isinstance(outputs, (list, tuple)):  # the memory network's hops too
            logits, attention = outputs
            return (preprocessor.graph_answers(logits, story, question)
                    | {"hop_attention": keras.ops.cast(attention, "float32")})
        return preprocessor.graph_answers(outputs, story, question)

    archive = keras.export.ExportArchive()
    for item in (reader, *preprocessor.graph_resources()):
        archive.track(item)
    archive.add_endpoint("serving_default", serve,
                         input_signature=preprocessor.serving_signature())
    return archive


def write_assets(model, preprocessor, path, task):
    """`assets.extra/` of an export written by `model.export`, as the command line's
    exports have it: the vocabulary, the answers' forms, the `.keras` model and
    `meta.json` (`task`: the command-line task it is read as), for `keras-attn
    predict`, `evaluate` and `explore`."""
    extra = write_export_meta(model, path, task, {"source": {"kind": "script"}, "names": {},
                                                  **preprocessor.sizes()})
    preprocessor.vocabulary.save(os.path.join(extra, "vocab.json"))
    with open(os.path.join(extra, "forms.json"), "w", encoding="utf-8") as f:
        json.dump(preprocessor.forms, f, ensure_ascii=False, indent=0)
    return path
