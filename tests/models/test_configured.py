import keras
import numpy as np
import pytest

from keras_attn.models.configured import ConfiguredModel


@keras.saving.register_keras_serializable(package="test_configured")
class _Sized(ConfiguredModel):
    INTEGER_FLOORS = {"offset": 0}

    def __init__(self, width: int = 4, offset: int = 0, limit: int | None = None,
                 ids=(1, 2), activation="relu", rate=0.5, **kwargs):
        inputs = keras.Input((3,))
        outputs = keras.layers.Dense(width + offset, activation=activation)(inputs)
        super().__init__(inputs, outputs, **kwargs)


def test_the_arguments_are_the_config_and_attributes():
    model = _Sized(width=np.int64(3), limit=np.int32(7), ids=np.array([4, 5]), name="sized")
    assert (model.width, model.limit, model.ids, model.rate) == (3, 7, (4, 5), 0.5)
    assert type(model.width) is int and type(model.limit) is int
    assert model.get_config() == {
        "name": "sized", "trainable": True, "dtype": keras.dtype_policies.serialize(
            keras.dtype_policies.DTypePolicy("float32")),
        "width": 3, "offset": 0, "limit": 7, "ids": [4, 5], "activation": "relu", "rate": 0.5,
    }
    again = _Sized.from_config(model.get_config())
    assert again.get_config() == model.get_config()
    assert again.layers[-1].units == 3


def test_integer_arguments_are_checked_with_their_floors_before_building():
    assert _Sized(offset=0).offset == 0 and _Sized().limit is None
    for arguments, message in [
        ({"width": 0}, r"`width` must be a positive integer; received 0"),
        ({"width": True}, r"`width` must be a positive integer; received True"),
        ({"width": 2.5}, r"`width` must be a positive integer; received 2.5"),
        ({"offset": -1}, r"`offset` must be an integer ≥ 0; received -1"),
        ({"limit": 0}, r"`limit` must be a positive integer or None; received 0"),
        ({"limit": "3"}, r"`limit` must be a positive integer or None; received '3'"),
    ]:
        with pytest.raises(ValueError, match=message):
            _Sized(**arguments)


def test_a_saved_model_reloads_as_its_class_with_its_weights(tmp_path):
    model = _Sized(width=2, trainable=False)
    x = np.random.default_rng(0).random((4, 3)).astype("float32")
    model.save(tmp_path / "sized.keras")
    loaded = keras.saving.load_model(tmp_path / "sized.keras")
    assert type(loaded) is _Sized and loaded.width == 2 and not loaded.trainable
    np.testing.assert_array_equal(np.asarray(loaded(x)), np.asarray(model(x)))


def test_a_mixed_precision_model_reloads_in_mixed_precision(tmp_path):
    keras.config.set_dtype_policy("mixed_float16")
    try:
        model = _Sized(width=2)
    finally:
        keras.config.set_dtype_policy("float32")
    model.save(tmp_path / "mixed.keras")
    loaded = keras.saving.load_model(tmp_path / "mixed.keras")
    assert loaded.layers[-1].dtype_policy.name == "mixed_float16"
    assert keras.config.dtype_policy().name == "float32"  # the global policy is restored


def test_an_argument_may_not_hide_a_model_attribute():
    with pytest.raises(TypeError, match=r"\['layers'\] would hide attributes"):
        class _Hiding(ConfiguredModel):  # noqa: F841
            def __init__(self, layers: int = 2, **kwargs):
                super().__init__(**kwargs)
