"""The translator's SavedModel signature (TensorFlow backend).

`serving_default(text)`: `text` `tf.string [batch]`, raw; tokenised in the graph as
in training (`keras_attn.training.export.tokenize`); returns `translation`
(`tf.string`), `score` (`float32`, the decoder's ranking score) and `alignment`
(`float32 [batch, out_len, in_len]`). An empty or whitespace-only string gives an
empty translation (score 0); a `text` that is not 1-D is refused with "`text` must
be a 1-D string tensor of shape [batch]".
"""

import keras
import tensorflow as tf

from keras_attn.models.translator import generate
from keras_attn.training.export import (
    assert_batch_of_strings,
    detokenize,
    is_blank,
    lookup_table,
    tokenize,
)


def archive(model, source_vocab, target_vocab, settings):
    """The export's `keras.export.ExportArchive`; `settings` is `RunMeta.settings`."""
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("export runs on the TensorFlow backend (KERAS_BACKEND=tensorflow)")
    max_source = int(settings["max_source_length"])
    max_steps = int(settings["max_target_length"]) - 1
    beam_width = int(settings["beam_width"])
    preprocess = settings["preprocess"]
    # Built outside the endpoint, so the archive can track it.
    table = lookup_table(source_vocab.tokens)

    def serve(text):
        text = assert_batch_of_strings("text", text)
        ids = tokenize(text, table, preprocess, max_source, source_vocab.longest_piece)
        out = generate(model, ids, max_steps, beam_width=beam_width,
                       length_penalty=float(settings["length_penalty"]))
        translation = detokenize(out["tokens"], target_vocab.tokens, preprocess)
        empty = is_blank(text)
        return {
            "translation": tf.where(empty, tf.constant(""), translation),
            "score": tf.where(empty, 0.0, tf.cast(out["scores"], tf.float32)),
            "alignment": tf.cast(out["alignments"], tf.float32),
        }

    export = keras.export.ExportArchive()
    export.track(model)
    export.track(table)
    export.add_endpoint(
        "serving_default", serve, input_signature=[tf.TensorSpec([None], tf.string, name="text")]
    )
    return export
