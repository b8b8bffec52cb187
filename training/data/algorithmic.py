"""The NTM's algorithmic tasks (Graves et al. 2014 §4), generated from a seed.

Each generator returns `(inputs, targets)`: `inputs (B, T, input_bits)` float32
and `targets (B, T, bits + 1)`, the target bits followed by a channel that is 1 on
the steps the cost counts (the output part). Batches are padded with zero steps
to a fixed `T` (`total_steps`) so a compiled step is reused whatever the length.

* copy: `L` random 8-bit vectors (channels 0–7), one delimiter step (channel 8),
  then `L` zero steps during which the copy is expected.
"""

import numpy as np


def copy_steps(length):
    return 2 * length + 1


def copy_batch(rng, batch_size, length, bits=8, total_steps=None):
    """A batch of copy sequences of one `length` (see the module docstring)."""
    if length < 1:
        raise ValueError(f"`length` must be ≥ 1; received {length}.")
    steps = total_steps or copy_steps(length)
    if steps < copy_steps(length):
        raise ValueError(f"`total_steps` {steps} < 2·length + 1 = {copy_steps(length)}.")
    pattern = rng.integers(0, 2, (batch_size, length, bits)).astype("float32")
    inputs = np.zeros((batch_size, steps, bits + 1), "float32")
    inputs[:, :length, :bits] = pattern
    inputs[:, length, bits] = 1.0
    targets = np.zeros((batch_size, steps, bits + 1), "float32")
    targets[:, length + 1 : 2 * length + 1, :bits] = pattern
    targets[:, length + 1 : 2 * length + 1, bits] = 1.0
    return inputs, targets
