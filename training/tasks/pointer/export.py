"""The pointer network's SavedModel (TensorFlow backend): the model's own
(`PointerNet.serving_archive`), with the run's decoder and run-time checks of the
served layout."""

import tensorflow as tf

from keras_attn.models.preprocessor_graph import assert_rank


def archive(model, settings):
    """A pointer network's `keras.export.ExportArchive` (`settings`: `RunMeta.settings`).

    The signatures of `PointerNet.serving_archive`, decoded as the run decodes
    (`beam_width`; for TSP the shortest tour of the beam), with the points past
    `max_points` (the largest set the run trained on) cut off. The wrong `D`, or
    `lengths` of another batch size, is refused at run time (`InvalidArgumentError`
    naming the layout). Duplicate points still give a permutation (or, for the
    hull, distinct indices): chosen positions are masked.
    """
    point_dim, supported = int(settings["point_dim"]), int(settings["max_points"])
    select = "tour_length" if settings["start_index"] is not None else "log_prob"

    def check_layout(points, lengths):
        points = assert_rank(points, 3, f"`points` must be [batch, N, {point_dim}]")
        lengths = assert_rank(lengths, 1, "`lengths` must be [batch]: one length per point set")
        with tf.control_dependencies([
            tf.debugging.assert_equal(
                tf.shape(points)[-1], point_dim,
                message=f"`points` must be [batch, N, {point_dim}]: {point_dim} coordinate(s) "
                        "a point, as trained"),
            tf.debugging.assert_equal(
                tf.size(lengths), tf.shape(points)[0],
                message="`lengths` must be [batch]: one length per point set"),
        ]):
            return tf.identity(points[:, :supported]), tf.identity(lengths)

    return model.serving_archive(int(settings["beam_width"]), select, input_check=check_layout)
