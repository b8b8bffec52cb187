"""Point-set problems for pointer networks, with exact answers and their metrics.

- Sorting (Vinyals, Bengio & Kudlur 2016): `N` floats in [0, 1]; the answer is the
  indices in increasing order of value.
- Planar convex hull (Vinyals, Fortunato & Jaitly 2015): `N` points uniform in the
  unit square; the answer is the hull's vertices counter-clockwise, starting from
  the leftmost one (ties: the lowest), from `scipy.spatial.ConvexHull`.
- Euclidean TSP: `N` points uniform in the unit square; the answer is an optimal
  tour, exact by Held–Karp dynamic programming, written from point 0 and
  counter-clockwise (a shortest tour never crosses itself, so it is a simple
  polygon and has an orientation; fixing it leaves one answer per instance).

Every generator takes a `numpy.random.Generator`, so a seed fixes the data.
"""

import functools
import itertools

import numpy as np

# -- generators --------------------------------------------------------------------------


def uniform_points(rng, count, n, dim):
    """`(count, n, dim)` float32 points uniform in [0, 1)^dim."""
    return rng.random((count, n, dim), dtype=np.float32)


def sort_order(values):
    """`(count, n)` indices that sort `(count, n, 1)` values (stable)."""
    return np.argsort(values[..., 0], axis=-1, kind="stable")


def hull_order(points):
    """The convex hull's vertex indices, counter-clockwise from the leftmost
    vertex (the lowest of equals). `points` `(n, 2)`."""
    from scipy.spatial import ConvexHull

    vertices = ConvexHull(points).vertices  # counter-clockwise in 2-D
    x, y = points[vertices, 0], points[vertices, 1]
    first = np.lexsort((y, x))[0]
    return np.roll(vertices, -first)


def hull_orders(points):
    """`hull_order` for each of `(count, n, 2)` point sets: a list of arrays."""
    return [hull_order(p) for p in points]


@functools.lru_cache(maxsize=None)
def _held_karp_layers(m):
    """Index arrays for each subset size k of the `m` nodes besides the start.

    For every (subset S, last node j ∈ S) of size k: its flat state `S·m + j`, the
    states `(S∖j)·m + i` it extends and the nodes `i` they end at (k − 1 each).
    """
    layers = []
    for k in range(2, m + 1):
        states, previous, ends, lasts = [], [], [], []
        for subset in itertools.combinations(range(m), k):
            mask = sum(1 << b for b in subset)
            for j in subset:
                rest = [i for i in subset if i != j]
                states.append(mask * m + j)
                previous.append([(mask ^ (1 << j)) * m + i for i in rest])
                ends.append(rest)
                lasts.append(j)
        layers.append((np.array(states), np.array(previous), np.array(ends), np.array(lasts)))
    return layers


def pairwise_distances(points):
    """`(count, n, n)` Euclidean distances."""
    diff = points[:, :, None, :] - points[:, None, :, :]
    return np.sqrt(np.sum(np.square(diff.astype(np.float64)), axis=-1))


def held_karp(points, chunk=2048):
    """Optimal tours of `(count, n, 2)` points, by dynamic programming over subsets
    (Held & Karp 1962), vectorised over instances: `O(2ⁿ n²)` per instance.

    Returns `(tours (count, n) int, lengths (count,))`; each tour starts at point 0
    and runs counter-clockwise.
    """
    points = np.asarray(points)
    count, n = points.shape[:2]
    if n > 13:
        raise ValueError(f"held_karp is exact and exponential: n ≤ 13; received n = {n}.")
    if n < 3:
        tours = np.tile(np.arange(n), (count, 1))
        return tours, _cycle_lengths(pairwise_distances(points), tours)
    tours = np.empty((count, n), dtype=np.int64)
    for start in range(0, count, chunk):
        tours[start : start + chunk] = _held_karp_chunk(points[start : start + chunk])
    tours = counter_clockwise(points, tours)
    return tours, _cycle_lengths(pairwise_distances(points), tours)


def _held_karp_chunk(points):
    batch, n = points.shape[:2]
    m = n - 1
    # float32 halves the gathers' memory traffic; lengths are recomputed in float64.
    dist = pairwise_distances(points).astype(np.float32)
    rows = np.arange(batch)[:, None]
    cost = np.full((batch, (1 << m) * m), np.inf, dtype=np.float32)
    parent = np.zeros((batch, (1 << m) * m), dtype=np.int8)
    singles = np.arange(m)
    cost[:, (1 << singles) * m + singles] = dist[:, 0, 1:]
    for states, previous, ends, lasts in _held_karp_layers(m):
        extended = cost[:, previous] + dist[:, ends + 1, (lasts + 1)[:, None]]
        best = np.argmin(extended, axis=-1)
        cost[:, states] = np.take_along_axis(extended, best[..., None], -1)[..., 0]
        parent[:, states] = ends[np.arange(len(states)), best]
    full = (1 << m) - 1
    closing = cost[:, full * m + singles] + dist[:, 1:, 0]
    last = np.argmin(closing, axis=-1)
    mask = np.full(batch, full)
    tour = np.zeros((batch, n), dtype=np.int64)
    for position in range(n - 1, 0, -1):
        tour[:, position] = last + 1
        previous_node = parent[rows[:, 0], mask * m + last].astype(np.int64)
        mask = mask ^ (1 << last)
        last = previous_node
    return tour


def polygon_signed_area(points, order):
    """The shoelace area of `points[order]` (positive: counter-clockwise)."""
    p = points[np.asarray(order)].astype(np.float64)
    x, y = p[:, 0], p[:, 1]
    return 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))


def counter_clockwise(points, tours):
    """Each tour from its first point, reversed where it runs clockwise."""
    tours = np.array(tours)
    p = np.take_along_axis(points, tours[..., None], axis=1).astype(np.float64)
    x, y = p[..., 0], p[..., 1]
    area = np.sum(x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y, axis=1)
    clockwise = area < 0
    tours[clockwise, 1:] = tours[clockwise, 1:][:, ::-1]
    return tours


def _cycle_lengths(dist, tours):
    nxt = np.roll(tours, -1, axis=1)
    rows = np.arange(len(tours))[:, None]
    return dist[rows, tours, nxt].sum(axis=1)


# -- metrics -----------------------------------------------------------------------------


def answer(indices):
    """One decoded row without its `-1` padding."""
    indices = np.asarray(indices)
    return indices[indices >= 0]


def is_permutation(indices, n):
    """Each of `0 … n − 1` exactly once."""
    return len(indices) == n and np.array_equal(np.sort(indices), np.arange(n))


def is_sorted_output(values, indices):
    """A permutation of the `n` values that lists them in non-decreasing order."""
    n = len(values)
    return is_permutation(indices, n) and bool(np.all(np.diff(values[indices]) >= 0))


def _segments_cross(a, b, c, d):
    """Whether segments ab and cd intersect (touching counts), elementwise."""

    def orient(p, q, r):
        return np.sign((q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1])
                       - (q[..., 1] - p[..., 1]) * (r[..., 0] - p[..., 0]))

    def on_segment(p, q, r):  # r on pq, given collinear
        return ((np.minimum(p[..., 0], q[..., 0]) <= r[..., 0])
                & (r[..., 0] <= np.maximum(p[..., 0], q[..., 0]))
                & (np.minimum(p[..., 1], q[..., 1]) <= r[..., 1])
                & (r[..., 1] <= np.maximum(p[..., 1], q[..., 1])))

    o1, o2, o3, o4 = orient(a, b, c), orient(a, b, d), orient(c, d, a), orient(c, d, b)
    proper = (o1 != o2) & (o3 != o4) & (o1 != 0) & (o2 != 0) & (o3 != 0) & (o4 != 0)
    touching = ((o1 == 0) & on_segment(a, b, c)) | ((o2 == 0) & on_segment(a, b, d)) | (
        (o3 == 0) & on_segment(c, d, a)) | ((o4 == 0) & on_segment(c, d, b))
    return proper | touching


def is_simple_polygon(points, order):
    """At least 3 distinct vertices, and no two non-adjacent edges meet."""
    order = np.asarray(order)
    k = len(order)
    if k < 3 or len(set(order.tolist())) != k:
        return False
    p = points[order]
    start, end = p, np.roll(p, -1, axis=0)
    i, j = np.triu_indices(k, 2)
    keep = ~((i == 0) & (j == k - 1))  # the first and last edges share a vertex
    i, j = i[keep], j[keep]
    return not bool(np.any(_segments_cross(start[i], end[i], start[j], end[j])))


def hull_figures(points, truths, predictions):
    """Exact-sequence accuracy and mean area coverage (Vinyals et al. 2015, Table 1):
    the predicted polygon's area over the true hull's, 0 unless it is simple."""
    from scipy.spatial import ConvexHull

    exact, coverage = [], []
    for p, truth, predicted in zip(points, truths, predictions, strict=True):
        exact.append(len(predicted) == len(truth) and bool(np.all(predicted == truth)))
        if is_simple_polygon(p, predicted):
            coverage.append(abs(polygon_signed_area(p, predicted)) / ConvexHull(p).volume)
        else:
            coverage.append(0.0)
    return {"accuracy": float(np.mean(exact)), "area_coverage": float(np.mean(coverage)),
            "simple_polygons": float(np.mean(np.array(coverage) > 0)), "n": len(exact)}


def nearest_neighbour_tours(points, start=0):
    """The greedy baseline: from `start`, always on to the nearest unvisited point.
    `(count, n, 2)` → `(count, n)` tours."""
    count, n = points.shape[:2]
    dist = pairwise_distances(points)
    rows = np.arange(count)
    visited = np.zeros((count, n), dtype=bool)
    tours = np.zeros((count, n), dtype=np.int64)
    tours[:, 0] = start
    visited[:, start] = True
    for step in range(1, n):
        here = dist[rows, tours[:, step - 1]]
        tours[:, step] = np.argmin(np.where(visited, np.inf, here), axis=1)
        visited[rows, tours[:, step]] = True
    return tours


def tour_length(points, tour):
    """The closed tour's Euclidean length."""
    p = points[np.asarray(tour)].astype(np.float64)
    return float(np.sum(np.linalg.norm(p - np.roll(p, -1, axis=0), axis=-1)))
