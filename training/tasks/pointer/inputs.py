"""What `predict` reads for the pointer tasks: a point set from the command line or a
file, checked (no TensorFlow here: the task and its `predict` both use it)."""

import numpy as np

from keras_attn.training.errors import UsageError


def check_points(points, point_dim, supported, name="the points"):
    """One point set `(N, D)` (or `(N,)` for D = 1), finite, 1 ≤ N ≤ supported."""
    points = np.asarray(points, dtype="float32")
    if points.ndim == 1 and point_dim == 1:
        points = points[:, None]
    if points.ndim != 2 or points.shape[1] != point_dim:
        raise UsageError(f"{name} must be (N, {point_dim}): {point_dim} coordinate(s) a point, "
                         f"as the model was trained; received shape {points.shape}.")
    if len(points) == 0:
        raise UsageError(f"{name} is empty: the model needs at least one point.")
    if len(points) > supported:
        raise UsageError(f"{name} has {len(points)} points; the model supports at most "
                         f"{supported}.")
    if not np.all(np.isfinite(points)):
        raise UsageError(f"{name} contains NaN or infinite coordinates.")
    return points


def read_points(path, point_dim, supported):
    """A `.npy` array or a text file of one point a line (coordinates separated by
    spaces or commas)."""
    try:
        if path.endswith(".npy"):
            data = np.load(path)
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read().replace(",", " ")
            data = np.array([[float(v) for v in line.split()] for line in text.splitlines()
                             if line.strip()], dtype="float32").reshape(-1, point_dim)
    except (OSError, ValueError) as error:
        raise UsageError(f"{path}: cannot read points ({error}).") from None
    return check_points(data, point_dim, supported, name=path)


def parse_points(text, point_dim, supported):
    """`"x y; x y; …"`: points separated by `;`, each with `point_dim` coordinates
    (separated by spaces or commas); without a `;`, the numbers are taken
    `point_dim` at a time (`"v v v"` for one coordinate)."""
    rows = [r for r in text.split(";") if r.strip()] if ";" in text else [text]
    try:
        rows = [[float(v) for v in row.replace(",", " ").split()] for row in rows]
    except ValueError:
        raise UsageError(f"--points must be numbers; received {text!r}.") from None
    if ";" in text:
        wrong = [len(r) for r in rows if len(r) != point_dim]
        if wrong:
            raise UsageError(f"--points: each point (between ';') needs {point_dim} "
                             f"coordinate(s), as the model was trained; received a point with "
                             f"{wrong[0]}.")
    values = [v for row in rows for v in row]
    if len(values) % point_dim:
        raise UsageError(f"--points needs {point_dim} coordinate(s) a point; received "
                         f"{len(values)} numbers.")
    return check_points(np.reshape(values, (-1, point_dim)), point_dim, supported,
                        name="--points")
