"""What `predict` reads for the bit-sequence tasks: a sequence from a file, checked,
or a generated example (no TensorFlow here: the task and its `predict` both use it)."""

import numpy as np

from keras_attn.training.errors import UsageError


def check_sequence(sequence, input_bits, name="the sequence"):
    """`(T, input_bits)` float32 (or a batch of them), finite and not empty."""
    sequence = np.asarray(sequence, dtype="float32")
    if sequence.ndim == 2:
        sequence = sequence[None]
    if sequence.ndim != 3 or sequence.shape[-1] != input_bits:
        raise UsageError(f"{name} must be (steps, {input_bits}) or (batch, steps, "
                         f"{input_bits}): {input_bits} channels a step, as the model was "
                         f"trained; received shape {sequence.shape}.")
    if sequence.shape[1] == 0:
        raise UsageError(f"{name} has no steps (shape {sequence.shape}).")
    if not np.all(np.isfinite(sequence)):
        raise UsageError(f"{name} contains NaN or infinite values.")
    return sequence


def read_sequence(path, input_bits):
    """A `.npy` array, or a text file of one step a line (numbers separated by spaces)."""
    try:
        data = np.load(path) if path.endswith(".npy") else np.loadtxt(path, ndmin=2)
    except (OSError, ValueError) as error:
        raise UsageError(f"{path}: cannot read a sequence ({error}).") from None
    return check_sequence(data, input_bits, name=path)


def example(task, seed, **params):
    """One generated `(inputs, targets)` pair with the given params (the training
    draw's where not given)."""
    rng = np.random.default_rng(seed)
    drawn = {**task.draw(rng), **{k: v for k, v in params.items() if v is not None}}
    return task.batch(rng, 1, drawn), drawn
