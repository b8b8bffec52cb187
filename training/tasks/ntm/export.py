"""The NTM and DNC bit-sequence models' SavedModel (TensorFlow backend): the model's own
(`BitSequenceModel.serving_archive`), with run-time checks of the served layout."""

import tensorflow as tf

from keras_attn.models.preprocessor_graph import assert_rank


def archive(model, settings):
    """An NTM's or a DNC's bit-sequence model's `keras.export.ExportArchive`
    (`settings`: `RunMeta.settings`).

    `serving_default(sequence)` as `BitSequenceModel.serving_archive` says; the wrong
    rank or number of channels is refused at run time (`InvalidArgumentError` naming
    the layout), as TF Serving lets other shapes through to the RNN, which fails
    obscurely.
    """
    input_bits = int(settings["input_bits"])
    layout = (f"`sequence` must be [batch, steps, {input_bits}]: {input_bits} channels a "
              "step, as trained")

    def check_layout(sequence):
        sequence = assert_rank(sequence, 3, layout)
        with tf.control_dependencies([tf.debugging.assert_equal(
                tf.shape(sequence)[-1], input_bits, message=layout)]):
            return tf.identity(sequence)

    return model.serving_archive(input_check=check_layout)
