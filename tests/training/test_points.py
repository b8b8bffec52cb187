"""Point-set data: exact answers against brute force and scipy, and the metrics."""

import itertools

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from keras_attn.training.tasks.pointer import inputs
from keras_attn.training.tasks.pointer import points as geometry
from keras_attn.training.tasks.pointer import task as pointer


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_held_karp_is_optimal_against_brute_force(n, rng):
    points = geometry.uniform_points(rng, 40, n, 2)
    tours, lengths = geometry.held_karp(points)
    for p, tour, length in zip(points, tours, lengths, strict=True):
        best = min(geometry.tour_length(p, (0, *rest))
                   for rest in itertools.permutations(range(1, n)))
        assert length == pytest.approx(best, abs=1e-5)
        assert geometry.tour_length(p, tour) == pytest.approx(length, abs=1e-9)
        assert tour[0] == 0 and sorted(tour) == list(range(n))
        assert geometry.polygon_signed_area(p, tour) > 0  # counter-clockwise


def test_held_karp_matches_the_published_mean_tour_lengths(rng):
    # Vinyals et al. 2015, Table 2: optimal mean lengths 2.12 (n = 5), 2.87 (n = 10).
    assert geometry.held_karp(geometry.uniform_points(rng, 4000, 5, 2))[1].mean() == \
        pytest.approx(2.12, abs=0.02)
    assert geometry.held_karp(geometry.uniform_points(rng, 2000, 10, 2))[1].mean() == \
        pytest.approx(2.87, abs=0.02)
    with pytest.raises(ValueError, match="n ≤ 13"):
        geometry.held_karp(np.zeros((1, 14, 2)))


def test_hull_order_is_scipys_hull_counter_clockwise_from_the_leftmost(rng):
    for p in geometry.uniform_points(rng, 50, 12, 2):
        order = geometry.hull_order(p)
        assert set(order) == set(ConvexHull(p).vertices)
        assert order[0] == np.argmin(p[:, 0])
        assert geometry.polygon_signed_area(p, order) == pytest.approx(ConvexHull(p).volume)
    square = np.array([[1, 1], [0, 0], [0.5, 0.5], [1, 0], [0, 1]], "float32")
    np.testing.assert_array_equal(geometry.hull_order(square), [1, 3, 0, 4])


def test_simple_polygons_and_area_coverage():
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]], "float32")
    assert geometry.is_simple_polygon(square, [0, 1, 2, 3])
    assert not geometry.is_simple_polygon(square, [0, 2, 1, 3])  # a bow tie
    assert not geometry.is_simple_polygon(square, [0, 1])
    assert not geometry.is_simple_polygon(square, [0, 1, 1])
    truth = [np.array([0, 1, 2, 3])]
    exact = geometry.hull_figures(square[None], truth, [np.array([0, 1, 2, 3])])
    assert exact["accuracy"] == 1.0 and exact["area_coverage"] == pytest.approx(1.0)
    inner = geometry.hull_figures(square[None], truth, [np.array([0, 1, 2, 4])])
    assert inner["accuracy"] == 0.0 and inner["area_coverage"] == pytest.approx(0.5)
    crossed = geometry.hull_figures(square[None], truth, [np.array([0, 2, 1, 3])])
    assert crossed["area_coverage"] == 0.0
    rotated = geometry.hull_figures(square[None], truth, [np.array([1, 2, 3, 0])])
    assert rotated["accuracy"] == 0.0 and rotated["area_coverage"] == pytest.approx(1.0)


def test_sort_figures():
    values = np.array([[[0.3], [0.1], [0.2]]], "float32")
    good = pointer.sort_score(values, None, np.array([[1, 2, 0]]))
    assert good["accuracy"] == 1.0 and good["valid"] == 1.0
    wrong = pointer.sort_score(values, None, np.array([[2, 1, 0]]))
    assert wrong["accuracy"] == 0.0 and wrong["valid"] == 1.0
    short = pointer.sort_score(values, None, np.array([[1, 2, -1]]))
    assert short["accuracy"] == 0.0 and short["valid"] == 0.0


def test_tsp_figures():
    square = np.array([[[0, 0], [1, 0], [1, 1], [0, 1]]], "float32")
    truth = np.array([[0, 1, 2, 3]])
    best = pointer.tsp_score(square, truth, truth)
    assert best["mean_length"] == pytest.approx(4.0) and best["ratio_to_optimal"] == 1.0
    assert best["optimal_found"] == 1.0 and best["valid"] == 1.0
    assert best["nearest_neighbour_mean_length"] == pytest.approx(4.0)
    crossed = pointer.tsp_score(square, truth, np.array([[0, 2, 1, 3]]))
    assert crossed["mean_length"] == pytest.approx(2 + 2 * np.sqrt(2))
    assert crossed["optimal_found"] == 0.0
    assert pointer.tsp_score(square, truth, np.array([[1, 2, 3, 0]]))["valid"] == 0.0


@pytest.mark.parametrize("name", sorted(pointer.SPECS))
def test_training_sets_mix_sizes_pad_and_repeat_from_the_seed(name):
    task = pointer.SPECS[name]
    low, high = 5, 8
    points, lengths, answers = pointer.training_set(task, 3, 40, low, high)
    assert points.shape == (40, high, task.point_dim) and answers.shape == (40, high)
    assert sorted(set(lengths.tolist())) == list(range(low, high + 1))
    for p, n, a in zip(points, lengths, answers, strict=True):
        assert np.all(p[n:] == 0)  # padding
        kept = a[a >= 0]
        assert np.all(a[len(kept):] == -1) and np.all(kept < n)
        np.testing.assert_array_equal(kept, task.answers(p[None, :n])[0][: len(kept)])
    again = pointer.training_set(task, 3, 40, low, high)
    np.testing.assert_array_equal(again[0], points)
    x, y, w = pointer.model_inputs(task, points, lengths, answers)
    assert x["decoder_tokens"].shape == y.shape == w.shape
    if task.model.get("start_index") is not None:
        assert np.all(x["decoder_tokens"][:, 0] == 1)  # point 0 is given first
        assert np.all(w.sum(1) == lengths)  # the other n − 1 points, then END


def test_points_given_to_predict_are_checked():
    with pytest.raises(ValueError, match=r"must be \(N, 2\)"):
        inputs.check_points(np.zeros((4, 3)), 2, 100)
    with pytest.raises(ValueError, match="is empty"):
        inputs.check_points(np.zeros((0, 2)), 2, 100)
    with pytest.raises(ValueError, match="supports at most 100"):
        inputs.check_points(np.zeros((101, 2)), 2, 100)
    with pytest.raises(ValueError, match="NaN or infinite"):
        inputs.check_points([[0, 1], [np.inf, 0]], 2, 100)
    assert inputs.parse_points("0.3 0.1 0.2", 1, 100).shape == (3, 1)
    assert inputs.parse_points("0 0; 1 0; 1 1", 2, 100).shape == (3, 2)
    with pytest.raises(ValueError, match="2 coordinate"):
        inputs.parse_points("0 0; 1", 2, 100)
    with pytest.raises(ValueError, match="must be numbers"):
        inputs.parse_points("a b", 2, 100)


def test_nearest_neighbour_tours(rng):
    line = np.array([[[0.0, 0.0], [3.0, 0.0], [1.0, 0.0], [2.0, 0.0]]])
    np.testing.assert_array_equal(geometry.nearest_neighbour_tours(line), [[0, 2, 3, 1]])
    points = geometry.uniform_points(rng, 200, 9, 2)
    tours = geometry.nearest_neighbour_tours(points)
    assert all(sorted(t) == list(range(9)) and t[0] == 0 for t in tours)
    optimal = geometry.held_karp(points)[1]
    lengths = [geometry.tour_length(p, t) for p, t in zip(points, tours, strict=True)]
    assert np.all(np.array(lengths) >= optimal - 1e-6)
