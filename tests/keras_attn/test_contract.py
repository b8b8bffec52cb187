"""The contract itself must fail on a broken layer, or it proves nothing."""

import keras
import numpy as np
import pytest

from tests.keras_attn.contract import run_layer_contract


@keras.saving.register_keras_serializable(package="keras_attn_tests")
class ForgetsItsConfig(keras.layers.Layer):
    def __init__(self, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return x * self.factor

    def get_config(self):  # drops `factor`
        return super().get_config()


@keras.saving.register_keras_serializable(package="keras_attn_tests")
class DeadWeight(keras.layers.Layer):
    def build(self, input_shape):
        self.used = self.add_weight(shape=(input_shape[-1],), initializer="ones")
        self.unused = self.add_weight(shape=(), initializer="ones")

    def call(self, x):
        return x * self.used

    def get_config(self):
        return super().get_config()


def test_contract_catches_incomplete_config():
    with pytest.raises(AssertionError):
        run_layer_contract(
            ForgetsItsConfig, {"factor": 3.0}, {"x": np.ones((2, 3), "float32")}, (2, 3)
        )


def test_contract_catches_a_weight_without_gradient():
    with pytest.raises(AssertionError, match="(zero|no) gradient"):
        run_layer_contract(DeadWeight, {}, {"x": np.ones((2, 3), "float32")}, (2, 3))


def test_contract_catches_wrong_shapes():
    with pytest.raises(AssertionError, match="eager output shapes"):
        run_layer_contract(DeadWeight, {}, {"x": np.ones((2, 3), "float32")}, (2, 4))
