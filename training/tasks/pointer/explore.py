"""The explore page of pointer-network exports: points in (typed, or random), the
chosen order, hull or tour and each step's pointer distribution out."""

import numpy as np
import tensorflow as tf

from keras_attn.training import charts
from keras_attn.training.errors import UsageError
from keras_attn.training.export import loaded_signature
from keras_attn.training.tasks.pointer import points as geometry
from keras_attn.training.tasks.pointer.inputs import parse_points


def points_text(points):
    return "; ".join(" ".join(f"{v:.3f}" for v in point) for point in points)


def random_points(spec, meta, seed, n=None):
    n = n or spec.sizes[1]
    n = min(n, int(meta.settings["max_points"]))
    return geometry.uniform_points(np.random.default_rng(seed), 1, n, spec.point_dim)[0]


def explore(spec, version_dir, meta, inputs):
    text = inputs.get("points", "")
    if not isinstance(text, str) or not text.strip():
        raise UsageError("--points: give the points, e.g. '0.1 0.2; 0.5 0.9; 0.7 0.3'")
    dim, supported = int(meta.settings["point_dim"]), int(meta.settings["max_points"])
    points = parse_points(text, dim, supported)
    out = loaded_signature(version_dir)(points=tf.constant(points[None]),
                                        lengths=tf.constant([len(points)], tf.int32))
    indices = out["indices"].numpy()[0]
    indices = indices[indices >= 0]
    log_prob = float(out["log_prob"].numpy()[0])
    figures = []
    if spec.name == "pointer-sort":
        values = points[:, 0]
        sorted_ = geometry.is_sorted_output(values, indices)
        answer = (f"order {' '.join(map(str, indices))}: "
                  + ("sorted" if sorted_ else "not sorted"))
        figures.append(charts.values_in_order(values, indices, "the values in output order"))
    else:
        closed = True
        if spec.name == "pointer-hull":
            area = abs(geometry.polygon_signed_area(points, indices)) if len(indices) > 2 else 0
            answer = f"hull {' '.join(map(str, indices))}: area {area:.4f}"
        else:
            answer = (f"tour {' '.join(map(str, indices))}: length "
                      f"{geometry.tour_length(points, indices):.4f}")
        figures.append(charts.path(points, indices, answer.split(":")[0], closed=closed))
    pointer = out["pointer"].numpy()[0]
    steps = len(indices) + 1
    figures.append(charts.heatmap(
        pointer[:steps, : len(points) + 1], ["END"] + [str(i) for i in range(len(points))],
        [f"step {t + 1}" for t in range(steps)], "the pointer's distribution at each step",
        "position", "output step", zmax=1.0))
    return {"answer": f"{answer} (log-probability {log_prob:.4f})", "figures": figures}
