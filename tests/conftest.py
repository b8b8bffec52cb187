import os

import keras_attn.training  # noqa: F401  (TensorFlow's allocator setting, before Keras starts it)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _float32_policy_and_seed():
    """Every test starts in float32 with fixed seeds, whatever the last one did."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    np.random.seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
