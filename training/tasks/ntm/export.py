"""The NTM and DNC bit-sequence models' SavedModel signature (TensorFlow backend)."""

import keras
import tensorflow as tf

from keras_attn.models.ntm import with_weightings
from keras_attn.models.text_graph import assert_rank


def archive(model, settings):
    """An NTM's or a DNC's bit-sequence model's `keras.export.ExportArchive`
    (`settings`: `RunMeta.settings`).

    `serving_default(sequence)`, `sequence` float32 `[batch, steps, input_bits]`
    in the task's layout (any number of steps, longer than trained included):
    returns `output` (bit probabilities `[batch, steps, output_bits]`),
    `read_weightings` and `write_weightings` (`[batch, steps, heads, memory_size]`)
    and `valid` (`[batch]`). Defined results for bad input: a sequence holding NaN
    or an infinity is not run (`valid` false, its outputs and weightings 0; the
    other sequences are unaffected); zero steps give empty outputs; the wrong
    number of channels is refused (`InvalidArgumentError` naming the layout).
    """
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("export runs on the TensorFlow backend (KERAS_BACKEND=tensorflow)")
    reader = with_weightings(model)
    input_bits, output_bits = int(settings["input_bits"]), int(settings["output_bits"])
    memory_size = int(settings["memory_size"])
    read_heads, write_heads = int(settings["read_heads"]), int(settings["write_heads"])

    def serve(sequence):
        # A loaded signature lets other shapes through to the RNN, which fails
        # obscurely; the run-time shape checks name the layout instead.
        layout = (f"`sequence` must be [batch, steps, {input_bits}]: {input_bits} channels a "
                  "step, as trained")
        sequence = assert_rank(sequence, 3, layout)
        with tf.control_dependencies([tf.debugging.assert_equal(
            tf.shape(sequence)[-1], input_bits, message=layout)]):
            sequence = tf.identity(sequence)
        finite = tf.math.is_finite(sequence)
        valid = tf.reduce_all(finite, axis=[1, 2])
        clean = tf.where(finite, sequence, 0.0)
        batch, steps = tf.shape(sequence)[0], tf.shape(sequence)[1]

        def run():
            return [tf.cast(t, tf.float32) for t in reader(clean)]

        def nothing():
            return [tf.zeros([batch, 0, output_bits]),
                    tf.zeros([batch, 0, read_heads, memory_size]),
                    tf.zeros([batch, 0, write_heads, memory_size])]

        # The RNN needs a first step to trace its loop; zero steps skip it.
        outputs = tf.cond(steps > 0, run, nothing)
        kept = tf.cast(valid, tf.float32)[:, None, None]
        output, reads, writes = outputs
        return {"output": output * kept, "read_weightings": reads * kept[..., None],
                "write_weightings": writes * kept[..., None], "valid": valid}

    export = keras.export.ExportArchive()
    export.track(reader)
    export.add_endpoint(
        "serving_default", serve,
        input_signature=[tf.TensorSpec([None, None, input_bits], tf.float32, name="sequence")],
    )
    return export
