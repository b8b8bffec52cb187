"""`keras-attn predict` for pointer-network exports: the indices and their figure."""

import numpy as np
import tensorflow as tf

from keras_attn.training.errors import UsageError
from keras_attn.training.plotting import pyplot
from keras_attn.training.tasks.pointer import points as geometry
from keras_attn.training.tasks.pointer.inputs import parse_points, read_points


def point_to(task, version_dir, meta, args):
    """Runs a pointer-network export on one point set (`--points`, `--points-file`,
    or generated with `--n` and `--seed`) and prints the indices, with the answer's
    figure (sorted or not, hull area, tour length). Returns what `plot_points`
    draws."""
    spec = task.spec
    dim, supported = int(meta.settings["point_dim"]), int(meta.settings["max_points"])
    given = [name for name in ("points", "points_file", "n") if getattr(args, name) is not None]
    if len(given) > 1:
        raise UsageError(f"predict: give one of --points, --points-file, --n; received "
                         f"{['--' + g.replace('_', '-') for g in given]}")
    try:
        if args.points is not None:
            points = parse_points(args.points, dim, supported)
        elif args.points_file:
            points = read_points(args.points_file, dim, supported)
        else:
            n = args.n if args.n is not None else spec.sizes[1]
            if not 1 <= n <= supported:
                raise ValueError(f"--n must be 1 … {supported} (the model's limit); received {n}.")
            rng = np.random.default_rng(args.seed)
            points = geometry.uniform_points(rng, 1, n, spec.point_dim)[0]
    except ValueError as error:
        raise UsageError(f"predict: {error}") from None
    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    out = serve(points=tf.constant(points[None]), lengths=tf.constant([len(points)], tf.int32))
    indices = out["indices"].numpy()[0]
    indices = indices[indices >= 0]
    print(f"{task.name}: {len(points)} points → indices {' '.join(map(str, indices))} "
          f"(log-probability {out['log_prob'].numpy()[0]:.4f})")
    if task.name == "pointer-sort":
        values = points[:, 0]
        print("  values in that order: " + " ".join(f"{v:.4g}" for v in values[indices]))
        print("  sorted: " + ("yes" if geometry.is_sorted_output(values, indices) else "no"))
    elif task.name == "pointer-hull":
        area = abs(geometry.polygon_signed_area(points, indices)) if len(indices) > 2 else 0.0
        simple = geometry.is_simple_polygon(points, indices)
        print(f"  polygon area {area:.4f}" + ("" if simple else " (not a simple polygon)"))
    else:
        print(f"  tour length {geometry.tour_length(points, indices):.4f}")
    return points, indices, task.name


def plot_points(points, indices, task_name, path):
    """The points and the predicted answer: the hull or tour as a closed polygon;
    for sorting, the values with their output rank."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    if task_name == "pointer-sort":
        values = points[:, 0]
        ax.bar(np.arange(len(values)), values, color="0.8")
        for rank, index in enumerate(indices):
            ax.annotate(str(rank + 1), (index, values[index]), ha="center", va="bottom")
        ax.set_xlabel("input position (bar label: output rank)")
        ax.set_ylabel("value")
    else:
        ax.scatter(points[:, 0], points[:, 1], s=14, color="0.3", zorder=3)
        if len(indices):
            cycle = points[np.append(indices, indices[0])]
            ax.plot(cycle[:, 0], cycle[:, 1], "-", color="tab:red", lw=1.5)
            ax.scatter(*points[indices[0]], s=60, facecolors="none", edgecolors="tab:red",
                       zorder=4, label="first output")
            ax.legend(loc="upper right", fontsize=8)
        for i, (x, y) in enumerate(points):
            ax.annotate(str(i), (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_aspect("equal")
    ax.set_title(f"{task_name}: {len(points)} points", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"figure saved to {path}")


