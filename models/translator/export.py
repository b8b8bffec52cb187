"""The translators' served SavedModel (TensorFlow backend).

`serving_default(text)`: `text` (strings, `[batch]`), raw; tokenised in the graph by
the model's `TranslatorPreprocessor` (its graph methods, the only code here that
touches strings); returns `translation` (strings), `score`
(`float32`, the decoder's ranking score) and `alignment` (`float32 [batch, out_len,
in_len]`). An empty or whitespace-only string gives an empty translation (score 0),
a batch of only such strings included; a `text` that is not 1-D is refused with
"`text` must be a 1-D string tensor of shape [batch]".
"""

import os

import keras

from keras_attn.models.configured import check_export_backend, write_export_meta
from keras_attn.models.translator.generation import decode_ids


def serving_archive(model, preprocessor, beam_width=1, length_penalty=0.0, max_length=None):
    """The export's `keras.export.ExportArchive` for `model` with `preprocessor`.

    Args:
        model: a `Translator` or `TransformerTranslator`.
        preprocessor: its `TranslatorPreprocessor`.
        beam_width, length_penalty: the served decoder.
        max_length: decoding steps (default `preprocessor.max_target_length − 1`).
    """
    check_export_backend()
    max_steps = int(max_length or preprocessor.max_target_length - 1)
    # Built outside the endpoint, so that the archive tracks them.
    source_table, target_table = preprocessor.lookup_tables()

    def serve(text):
        text, blank = preprocessor.served_text(text)
        out = decode_ids(model, preprocessor(text), max_steps, beam_width=beam_width,
                         length_penalty=float(length_penalty))
        return {
            "translation": preprocessor.detokenize(out["tokens"], blank=blank),
            "score": keras.ops.where(blank, 0.0, keras.ops.cast(out["scores"], "float32")),
            "alignment": keras.ops.cast(out["alignments"], "float32"),
        }

    export = keras.export.ExportArchive()
    export.track(model)
    export.track(source_table)
    export.track(target_table)
    export.add_endpoint("serving_default", serve,
                        input_signature=preprocessor.serving_signature())
    return export


def export_settings(preprocessor, beam_width, length_penalty, model):
    """What `predict`, `explore` and `evaluate` read of an export (`meta.json`'s
    `settings`)."""
    return {
        "model": model.MODEL_KIND,
        "kind": "text",
        "max_source_length": preprocessor.max_source_length,
        "max_target_length": preprocessor.max_target_length,
        "preprocess": preprocessor.preprocess,
        "beam_width": int(beam_width),
        "length_penalty": float(length_penalty),
    }


def write_export(model, archive, path, beam_width=1, length_penalty=0.0):
    """Writes `archive` to `path`, with `assets.extra/` as the CLI's exports have it:
    the `.keras` model, both vocabularies and `meta.json`."""
    archive.write_out(path, verbose=False)
    preprocessor = model.preprocessor
    extra = write_export_meta(model, path, "translator",
                              export_settings(preprocessor, beam_width, length_penalty, model))
    preprocessor.source.save(os.path.join(extra, "source_vocab.json"))
    preprocessor.target.save(os.path.join(extra, "target_vocab.json"))
    return path
