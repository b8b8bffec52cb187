"""Process-wide settings for training runs that keep TensorFlow out of non-TF backends."""

import random

import numpy as np


def set_seed(seed):
    """Seeds Python, NumPy and Keras (and torch on that backend).

    `keras.utils.set_random_seed` also seeds TensorFlow whenever it is installed,
    which imports it even on JAX; here TensorFlow is seeded only on its backend.
    """
    import keras

    if keras.backend.backend() == "tensorflow":
        keras.utils.set_random_seed(seed)
        return
    # What set_random_seed does besides TF: the global seed that Keras's
    # unseeded initializers and `keras.random` draw from (no public setter).
    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator
    from keras.src.utils.rng_utils import GLOBAL_RANDOM_SEED

    global_state.set_global_attribute(GLOBAL_RANDOM_SEED, seed)
    global_state.set_global_attribute(seed_generator.GLOBAL_SEED_GENERATOR, None)
    random.seed(seed)
    np.random.seed(seed)
    if keras.backend.backend() == "torch":
        import torch

        torch.manual_seed(seed)
