"""The NTM task generators: layouts checked against the definitions, step by step."""

import numpy as np
import pytest

from keras_attn.training.tasks.ntm import algorithmic


def test_copy_layout():
    x, y = algorithmic.copy_batch(np.random.default_rng(0), 3, 4, total_steps=12)
    assert x.shape == (3, 12, 9) and y.shape == (3, 12, 9)
    np.testing.assert_array_equal(y[:, 5:9, :8], x[:, :4, :8])
    assert np.all(x[:, 4, 8] == 1) and x[:, :, 8].sum() == 3
    np.testing.assert_array_equal(y[0, :, -1], [0] * 5 + [1] * 4 + [0] * 3)
    assert not x[:, 5:].any()


def test_repeat_copy_layout():
    length, repeats = 3, 4
    x, y = algorithmic.repeat_copy_batch(np.random.default_rng(1), 2, length, repeats)
    steps = algorithmic.repeat_copy_steps(length, repeats)
    assert steps == 3 + 2 + 12 + 1 and x.shape == (2, steps, 10) and y.shape == (2, steps, 10)
    pattern = x[:, :length, :8]
    assert np.all(x[:, length, 8] == 1) and x[:, :, 8].sum() == 2
    np.testing.assert_allclose(x[:, length + 1, 9], (4 - 5.5) / np.sqrt(99 / 12))
    for r in range(repeats):
        start = length + 2 + r * length
        np.testing.assert_array_equal(y[:, start : start + length, :8], pattern)
    # The end marker, on its own step after the last copy, and nowhere else.
    np.testing.assert_array_equal(y[:, :, 8].sum(1), [1, 1])
    assert np.all(y[:, steps - 1, 8] == 1) and not y[:, steps - 1, :8].any()
    np.testing.assert_array_equal(y[0, :, -1], [0] * (length + 2) + [1] * (steps - length - 2))


def test_repeat_copy_with_a_start_marker_and_a_scaled_count():
    length, repeats = 3, 15
    x, y = algorithmic.repeat_copy_batch(np.random.default_rng(1), 2, length, repeats,
                                         start_marker=True, count_scale=20)
    steps = algorithmic.repeat_copy_steps(length, repeats, start_marker=True)
    assert steps == 1 + 3 + 2 + 45 + 1 and x.shape == (2, steps, 11) and y.shape == (2, steps, 10)
    # The start flag alone on the first step, on its own channel.
    np.testing.assert_array_equal(x[:, :, 10].sum(1), [1, 1])
    assert np.all(x[:, 0, 10] == 1) and not x[:, 0, :10].any()
    pattern = x[:, 1 : 1 + length, :8]
    assert np.all(x[:, 1 + length, 8] == 1) and x[:, :, 8].sum() == 2
    # 15 repeats over a scale of 20: inside the 0.05 … 0.5 of counts 1 … 10.
    np.testing.assert_allclose(x[:, 2 + length, 9], 0.75)
    for r in range(repeats):
        start = 1 + length + 2 + r * length
        np.testing.assert_array_equal(y[:, start : start + length, :8], pattern)
    assert np.all(y[:, steps - 1, 8] == 1) and y[:, :, 8].sum() == 2
    np.testing.assert_array_equal(y[0, :, -1], [0] * (length + 3) + [1] * (steps - length - 3))


def test_repeat_copy_refuses_a_count_scale_that_is_not_positive():
    with pytest.raises(ValueError, match="`count_scale` must be a positive number"):
        algorithmic.repeat_copy_batch(np.random.default_rng(0), 1, 2, 2, count_scale=0)


def test_normalised_repeats_have_mean_zero_and_variance_one():
    values = algorithmic.normalised_repeats(np.arange(1, 11), 10)
    assert abs(values.mean()) < 1e-12 and abs(values.var() - 1) < 1e-12


def test_associative_recall_answers_the_item_after_the_query():
    rng = np.random.default_rng(2)
    items, length = 5, 3
    x, y = algorithmic.associative_recall_batch(rng, 64, items)
    steps = algorithmic.associative_recall_steps(items)
    assert steps == 5 * 4 + 8 and x.shape == (64, steps, 8) and y.shape == (64, steps, 7)
    stored = np.stack([x[:, i * 4 + 1 : i * 4 + 4, :6] for i in range(items)], 1)
    np.testing.assert_array_equal(x[:, [i * 4 for i in range(items)], 6], 1)
    query = x[:, items * 4 + 1 : items * 4 + 4, :6]
    assert np.all(x[:, [items * 4, items * 4 + 4], 7] == 1)
    answer = y[:, steps - length :, :6]
    assert np.all(y[:, steps - length :, -1] == 1) and y[:, : steps - length, -1].sum() == 0
    for b in range(64):
        # Contents are random: find the queried item by its bits.
        matches = [i for i in range(items - 1) if np.array_equal(stored[b, i], query[b])]
        assert any(np.array_equal(stored[b, i + 1], answer[b]) for i in matches)
    # Every item but the last is queried sometimes.
    queried = {next(i for i in range(items - 1) if np.array_equal(stored[b, i], query[b]))
               for b in range(64)}
    assert queried == set(range(items - 1))


def test_priority_sort_outputs_the_top_vectors_highest_first():
    x, y = algorithmic.priority_sort_batch(np.random.default_rng(3), 8)
    assert x.shape == (8, 37, 10) and y.shape == (8, 37, 9)
    assert np.all(x[:, 20, 9] == 1) and not x[:, 21:].any()
    for b in range(8):
        priorities = x[b, :20, 8]
        assert np.all((-1 <= priorities) & (priorities <= 1))
        order = np.argsort(-priorities)[:16]
        np.testing.assert_array_equal(y[b, 21:, :8], x[b, order, :8])
    np.testing.assert_array_equal(y[0, :, -1], [0] * 21 + [1] * 16)


@pytest.mark.parametrize("call, message", [
    (lambda rng: algorithmic.copy_batch(rng, 1, 0), "`length` must be a positive integer"),
    (lambda rng: algorithmic.copy_batch(rng, 1, 5, total_steps=9), "`total_steps` 9"),
    (lambda rng: algorithmic.repeat_copy_batch(rng, 1, 2, 0), "`repeats` must be"),
    (lambda rng: algorithmic.associative_recall_batch(rng, 1, 1), "`items` must be an integer ≥ 2"),
    (lambda rng: algorithmic.priority_sort_batch(rng, 1, 4, 5), "`outputs` \\(5\\) must be ≤"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call(np.random.default_rng(0))


def test_same_seed_same_batch():
    a = algorithmic.repeat_copy_batch(np.random.default_rng(7), 2, 3, 2)
    b = algorithmic.repeat_copy_batch(np.random.default_rng(7), 2, 3, 2)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
