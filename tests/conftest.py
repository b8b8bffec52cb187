import os

import keras_attn.training  # noqa: F401  (TensorFlow's allocator setting, before Keras starts it)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

#: The seed every test starts from; `KERAS_ATTN_TEST_SEED=N pytest` reruns the suite
#: with other initial weights and draws, to show a training test's margins hold.
SEED = int(os.environ.get("KERAS_ATTN_TEST_SEED", "1234"))


#: Whether the seed was given: then it also reaches the `rng` fixture's draws and the
#: runs a test trains through the command line without `--seed`.
SEED_GIVEN = "KERAS_ATTN_TEST_SEED" in os.environ


@pytest.fixture(autouse=True)
def _float32_policy_and_seed(monkeypatch):
    """Every test starts in float32 with fixed seeds, whatever the last one did."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(SEED)
    np.random.seed(SEED)
    if SEED_GIVEN:
        from keras_attn.training import runner

        monkeypatch.setattr(runner, "DEFAULT_SEED", SEED)
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture
def rng():
    return np.random.default_rng(SEED if SEED_GIVEN else 0)
