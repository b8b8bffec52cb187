"""The pointer network's SavedModel signatures (TensorFlow backend)."""

import keras
import tensorflow as tf

from keras_attn.models.pointer_net import decode
from keras_attn.models.text_graph import assert_rank


def archive(model, settings):
    """A pointer network's `keras.export.ExportArchive` (`settings`: `RunMeta.settings`).

    Signatures:
    - `serving_default(points, lengths)`: `points` float32 `[batch, N, D]`,
      `lengths` int32 `[batch]` (the real points of each row; those after it are
      padding and ignored);
    - `all_points(points)`: every row uses all `N` points.

    Both return `indices` int32 `[batch, N']` (`N' = min(N, max_points)`) in output
    order, `-1` after the end; `log_prob` float32 `[batch]`; `pointer` float32
    `[batch, N' + 1, N' + 1]`, each step's distribution over `[END, x_1 … x_N']`;
    and `valid` bool `[batch]`. The decoder is the run's (`beam_width`; for TSP the
    shortest tour of the beam). Defined results for bad input: a row is decoded
    only if `1 ≤ length ≤ min(N, max_points)` and its real points are finite;
    otherwise `valid` is false, its indices are -1 and `log_prob` and `pointer`
    0, and the other rows are unaffected. `N = 0` gives `[batch, 0]` indices. The
    wrong `D`, or `lengths` of another batch size, is refused
    (`InvalidArgumentError` naming the layout). Duplicate points still give a
    permutation (or, for the hull, distinct indices): chosen positions are masked.
    """
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("export runs on the TensorFlow backend (KERAS_BACKEND=tensorflow)")
    point_dim, supported = int(settings["point_dim"]), int(settings["max_points"])
    beam_width = int(settings["beam_width"])
    select = "tour_length" if settings["start_index"] is not None else "log_prob"

    def run(points, lengths):
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
            points = tf.identity(points[:, :supported])
        lengths = tf.reshape(lengths, [-1])
        batch, n = tf.shape(points)[0], tf.shape(points)[1]
        real = tf.range(n)[None, :] < lengths[:, None]
        finite = tf.reduce_all(tf.math.is_finite(points), axis=-1)
        valid = tf.logical_and(tf.logical_and(lengths >= 1, lengths <= n),
                               tf.reduce_all(tf.logical_or(finite, tf.logical_not(real)), axis=1))
        kept = tf.logical_and(real, valid[:, None])
        clean = tf.where(kept[..., None], points, 0.0)
        safe_lengths = tf.where(valid, lengths, 1)

        def decoded():
            out = decode(model, clean, safe_lengths, beam_width=beam_width, select=select)
            return (tf.cast(out["indices"], tf.int32), tf.cast(out["log_prob"], tf.float32),
                    tf.cast(out["pointer"], tf.float32))

        def nothing():
            return (tf.zeros([batch, 0], tf.int32), tf.zeros([batch], tf.float32),
                    tf.zeros([batch, 1, 1], tf.float32))

        indices, log_prob, pointer = tf.cond(n > 0, decoded, nothing)
        return {"indices": tf.where(valid[:, None], indices, -1),
                "log_prob": tf.where(valid, log_prob, 0.0),
                "pointer": pointer * tf.cast(valid, tf.float32)[:, None, None],
                "valid": valid}

    def all_points(points):
        return run(points, tf.fill(tf.shape(points)[:1], tf.shape(points)[1]))

    points_spec = tf.TensorSpec([None, None, point_dim], tf.float32, name="points")
    export = keras.export.ExportArchive()
    export.track(model)
    export.add_endpoint("serving_default", run, input_signature=[
        points_spec, tf.TensorSpec([None], tf.int32, name="lengths")])
    export.add_endpoint("all_points", all_points, input_signature=[points_spec])
    return export
