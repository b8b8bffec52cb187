"""The NTM's algorithmic tasks (Graves, Wayne & Danihelka 2014, §4), generated from a seed.

Each generator returns `(inputs, targets)`: `inputs (B, T, input_bits)` float32 and
`targets (B, T, output_bits + 1)`, the target bits followed by a channel that is 1 on
the steps the cost counts (the output part). Every sequence of a batch has the same
layout; a batch may be padded with zero steps at the end to `total_steps`, so a
compiled training step can be reused for several lengths.

* copy (`bits` = 8): `L` random vectors (channels 0–7), a delimiter step
  (channel 8), then `L` zero steps during which the copy is expected:
  `T = 2L + 1`, inputs 9 channels, outputs 8.
* repeat copy: `L` vectors, a delimiter (channel `bits`), one step carrying the
  repeat count `R` on channel `bits + 1`; then the sequence `R` times and an end
  marker on output channel `bits`: `T = L + 2 + L·R + 1`, inputs `bits + 2`, outputs
  `bits + 1`. The count is `R / count_scale` when `count_scale` is given (DeepMind's
  DNC code: with the scale at least the largest count tested, an unseen count stays in
  the range trained on), otherwise normalised to mean 0 and variance 1 over
  `1 … max_repeats` (pytorch-ntm; 15 repeats then lie at +3.3 σ against a training
  maximum of +1.57 σ). With `start_marker` a first step flags the start on channel
  `bits + 2` (inputs `bits + 3`, `T` one longer): a content anchor the read head can
  return to at each repetition.
* associative recall (`bits` = 6, items of 3 vectors): each item is a delimiter
  step (channel `bits`) and its vectors; then a query delimiter (channel
  `bits + 1`), a copy of one item but the last, the query delimiter again, and
  the item that followed it is expected: `T = n·(l + 1) + 2l + 2`, inputs
  `bits + 2`, outputs `bits`.
* priority sort: 20 random vectors, each with a priority drawn uniformly from
  [−1, 1] on channel `bits`; a delimiter (channel `bits + 1`); then the 16 vectors
  of highest priority, highest first: `T = 20 + 1 + 16`, inputs `bits + 2`,
  outputs `bits`.
"""

import numbers

import numpy as np


def _check_integer(name, value, least):
    """`ValueError` unless `value` is an integer ≥ `least` (bools refused).

    The same rule and message as `keras_attn._validation.check_integer`, kept here
    because importing `keras_attn` imports Keras: the CLI builds its parser from
    the task modules, which import this one, before `--backend` is applied.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        expected = "a positive integer" if least == 1 else f"an integer ≥ {least}"
        raise ValueError(f"`{name}` must be {expected}; received {value!r}.")


def _arrays(batch_size, steps, total_steps, input_bits, output_bits):
    total = steps if total_steps is None else total_steps
    if total < steps:
        raise ValueError(f"`total_steps` {total} is shorter than the sequence's {steps} steps.")
    return (np.zeros((batch_size, total, input_bits), "float32"),
            np.zeros((batch_size, total, output_bits + 1), "float32"))


def _bits(rng, *shape):
    return rng.integers(0, 2, shape).astype("float32")


def copy_steps(length):
    return 2 * length + 1


def copy_batch(rng, batch_size, length, bits=8, total_steps=None):
    """A batch of copy sequences of one `length` (see the module docstring)."""
    _check_integer("length", length, 1)
    inputs, targets = _arrays(batch_size, copy_steps(length), total_steps, bits + 1, bits)
    pattern = _bits(rng, batch_size, length, bits)
    inputs[:, :length, :bits] = pattern
    inputs[:, length, bits] = 1.0
    targets[:, length + 1 : 2 * length + 1, :bits] = pattern
    targets[:, length + 1 : 2 * length + 1, bits] = 1.0
    return inputs, targets


# A repeat count over this scale: at least the largest count the figures test.
COUNT_SCALE = 20


def repeat_copy_steps(length, repeats, start_marker=False):
    return int(start_marker) + length + 2 + length * repeats + 1


def normalised_repeats(repeats, max_repeats=10):
    """`R` scaled to mean 0, variance 1 over the uniform counts `1 … max_repeats`."""
    mean = (max_repeats + 1) / 2
    std = np.sqrt((max_repeats**2 - 1) / 12) if max_repeats > 1 else 1.0
    return (repeats - mean) / std


def repeat_copy_batch(rng, batch_size, length, repeats, bits=8, max_repeats=10, total_steps=None,
                      start_marker=False, count_scale=None):
    """A batch of repeat-copy sequences of one `length` and one `repeats` count."""
    _check_integer("length", length, 1)
    _check_integer("repeats", repeats, 1)
    if count_scale is not None and not count_scale > 0:
        raise ValueError(f"`count_scale` must be a positive number or None; received "
                         f"{count_scale!r}.")
    steps = repeat_copy_steps(length, repeats, start_marker)
    inputs, targets = _arrays(batch_size, steps, total_steps, bits + 2 + int(start_marker),
                              bits + 1)
    first = int(start_marker)  # the first data step
    if start_marker:
        inputs[:, 0, bits + 2] = 1.0
    pattern = _bits(rng, batch_size, length, bits)
    inputs[:, first : first + length, :bits] = pattern
    inputs[:, first + length, bits] = 1.0
    inputs[:, first + length + 1, bits + 1] = (
        normalised_repeats(repeats, max_repeats) if count_scale is None else repeats / count_scale)
    start = first + length + 2
    targets[:, start : start + length * repeats, :bits] = np.tile(pattern, (1, repeats, 1))
    targets[:, steps - 1, bits] = 1.0
    targets[:, start:steps, -1] = 1.0
    return inputs, targets


def associative_recall_steps(items, item_length=3):
    return items * (item_length + 1) + 2 * item_length + 2


def associative_recall_batch(rng, batch_size, items, bits=6, item_length=3, total_steps=None):
    """A batch of associative-recall sequences with `items` items each."""
    _check_integer("items", items, 2)
    _check_integer("item_length", item_length, 1)
    steps = associative_recall_steps(items, item_length)
    inputs, targets = _arrays(batch_size, steps, total_steps, bits + 2, bits)
    contents = _bits(rng, batch_size, items, item_length, bits)
    stride = item_length + 1
    for item in range(items):
        inputs[:, item * stride, bits] = 1.0
        inputs[:, item * stride + 1 : (item + 1) * stride, :bits] = contents[:, item]
    query = rng.integers(0, items - 1, batch_size)
    rows = np.arange(batch_size)
    start = items * stride
    inputs[:, start, bits + 1] = 1.0
    inputs[:, start + 1 : start + 1 + item_length, :bits] = contents[rows, query]
    inputs[:, start + 1 + item_length, bits + 1] = 1.0
    answer = start + 2 + item_length
    targets[:, answer : answer + item_length, :bits] = contents[rows, query + 1]
    targets[:, answer : answer + item_length, -1] = 1.0
    return inputs, targets


def priority_sort_steps(inputs=20, outputs=16):
    return inputs + 1 + outputs


def priority_sort_batch(rng, batch_size, inputs=20, outputs=16, bits=8, total_steps=None):
    """A batch of priority-sort sequences: `inputs` vectors in, the top `outputs` out."""
    _check_integer("inputs", inputs, 1)
    _check_integer("outputs", outputs, 1)
    if outputs > inputs:
        raise ValueError(f"`outputs` ({outputs}) must be ≤ `inputs` ({inputs}).")
    steps = priority_sort_steps(inputs, outputs)
    x, targets = _arrays(batch_size, steps, total_steps, bits + 2, bits)
    vectors = _bits(rng, batch_size, inputs, bits)
    priorities = rng.uniform(-1.0, 1.0, (batch_size, inputs)).astype("float32")
    x[:, :inputs, :bits] = vectors
    x[:, :inputs, bits] = priorities
    x[:, inputs, bits + 1] = 1.0
    order = np.argsort(-priorities, axis=1, kind="stable")[:, :outputs]
    targets[:, inputs + 1 : steps, :bits] = np.take_along_axis(vectors, order[..., None], axis=1)
    targets[:, inputs + 1 : steps, -1] = 1.0
    return x, targets
