"""What `predict` reads for the bit-sequence tasks: a sequence from a file, checked,
or a generated example (no TensorFlow here: the task and its `predict` both use it)."""

import numpy as np

from keras_attn.models.ntm import check_bit_sequences
from keras_attn.training.errors import UsageError


def check_sequence(sequence, input_bits, name="the sequence"):
    """`(T, input_bits)` float32 (or a batch of them), finite and not empty
    (`models.ntm.check_bit_sequences`, its error as the command line's)."""
    try:
        return check_bit_sequences(sequence, input_bits, name)
    except ValueError as error:
        raise UsageError(str(error)) from None


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
