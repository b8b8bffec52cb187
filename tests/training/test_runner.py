"""The runner's one reach into Keras's private modules: seeding without TensorFlow."""

import random

import keras
import numpy as np

from keras_attn.training.runner import seed_keras


def _draws():
    return keras.ops.convert_to_numpy(keras.random.uniform((5,)))  # the global generator


def test_seed_keras_seeds_as_set_random_seed_does():
    # `seed_keras` (with Python's own seed, as `set_seed` adds) resets what
    # `keras.utils.set_random_seed` resets; if a Keras upgrade moves the private
    # names it sets, this import or these draws fail.
    keras.utils.set_random_seed(7)
    expected = _draws()
    keras.utils.set_random_seed(99)
    assert not np.array_equal(_draws(), expected)
    seed_keras(7)
    random.seed(7)
    np.testing.assert_array_equal(_draws(), expected)
