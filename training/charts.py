"""Plotly figures as plain dicts, for the explore page (`keras-attn explore`).

The page draws them with Plotly's script; building them needs no plotting library
here. Values are turned into lists of Python floats (JSON)."""

import numpy as np


def _list(values):
    return np.asarray(values, dtype="float64").round(5).tolist()


def heatmap(z, x, y, title, x_title="", y_title="", zmin=0.0, zmax=None):
    """`z[i][j]` at row `y[i]`, column `x[j]`; the first row at the top, and hover
    shows each cell's value."""
    return {
        "data": [{"type": "heatmap", "z": _list(z), "x": list(map(str, x)),
                  "y": list(map(str, y)), "colorscale": "Viridis", "zmin": zmin,
                  "zmax": zmax, "hovertemplate": "%{y} × %{x}: %{z:.3f}<extra></extra>"}],
        "layout": {"title": {"text": title}, "xaxis": {"title": {"text": x_title},
                                                       "type": "category"},
                   "yaxis": {"title": {"text": y_title}, "autorange": "reversed",
                             "type": "category"},
                   "margin": {"l": 120, "r": 20, "t": 50, "b": 80}},
    }


def bars(groups, labels, title, y_title=""):
    """One bar trace per `(name, values)` of `groups`, over `labels`."""
    return {
        "data": [{"type": "bar", "name": name, "x": list(map(str, labels)), "y": _list(values)}
                 for name, values in groups],
        "layout": {"title": {"text": title}, "barmode": "group",
                   "yaxis": {"title": {"text": y_title}, "range": [0, 1]},
                   "margin": {"l": 60, "r": 20, "t": 50, "b": 120}},
    }


def path(points, order, title, closed=False):
    """2-D points as markers, numbered, and `order` drawn as a line through them."""
    points = np.asarray(points, dtype="float64")
    chosen = list(order) + ([order[0]] if closed and len(order) else [])
    return {
        "data": [
            {"type": "scatter", "mode": "markers+text", "name": "points",
             "x": _list(points[:, 0]), "y": _list(points[:, 1]),
             "text": [str(i) for i in range(len(points))], "textposition": "top center"},
            {"type": "scatter", "mode": "lines", "name": "answer",
             "x": _list(points[chosen, 0]), "y": _list(points[chosen, 1])},
        ],
        "layout": {"title": {"text": title}, "yaxis": {"scaleanchor": "x"},
                   "margin": {"l": 50, "r": 20, "t": 50, "b": 50}},
    }


def values_in_order(values, order, title):
    """1-D values (sorting): each value at its output position."""
    return {
        "data": [{"type": "scatter", "mode": "lines+markers", "name": "output order",
                  "x": list(range(1, len(order) + 1)), "y": _list(np.asarray(values)[order])}],
        "layout": {"title": {"text": title}, "xaxis": {"title": {"text": "output position"}},
                   "yaxis": {"title": {"text": "value"}},
                   "margin": {"l": 60, "r": 20, "t": 50, "b": 50}},
    }
