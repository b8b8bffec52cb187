"""`ConfiguredModel`: a functional model whose constructor arguments are its config.

As keras-hub's backbones: a model is built by calling its class with its sizes
and choices, `get_config()` returns exactly those arguments and `from_config`
calls the class with them again, so no parallel config class copies them, and a
saved `.keras` file names the model's own class.
"""

import functools
import inspect
import numbers
import types

import keras
import numpy as np

from keras_attn import _validation

# The layout of a run's and an export's `meta.json` (`keras_attn.training.task.RunMeta`),
# which `model.export` writes too; bumped when a field's meaning changes.
META_FORMAT = 2


def write_export_meta(model, path, task, settings):
    """`assets.extra/` of an export a script wrote: the `.keras` model and `meta.json`
    (`task`: the `keras-attn` task it is read as; `settings`: what `predict`,
    `evaluate` and `explore` read), as the command line's exports have them."""
    import json
    import os

    extra = os.path.join(path, "assets.extra")
    os.makedirs(extra, exist_ok=True)
    model.save(os.path.join(extra, "model.keras"))
    config = {k: v for k, v in model.get_config().items() if k != "preprocessor"}
    meta = {"task": task, "name": model.name, "config": config, "settings": settings,
            "data": {"source": "script"}, "training": {}, "format": META_FORMAT}
    with open(os.path.join(extra, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2, ensure_ascii=False)
    return extra


def check_export_arguments(what, inputs, format, input_signature, kwargs):
    """Refuses what a zoo model's `export` does not take: another `format` than a
    SavedModel, or an `input_signature` or keyword of Keras's `Model.export` (the
    served inputs are fixed: `inputs`, e.g. "`text` strings")."""
    if format != "tf_saved_model":
        raise ValueError(f"`format` must be 'tf_saved_model' for {what} (its export takes "
                         f"{inputs}); received {format!r}.")
    if input_signature is not None or kwargs:
        raise ValueError(f"{what[0].upper() + what[1:]}'s export takes {inputs}; "
                         "`input_signature` and other arguments are not used; received "
                         f"{sorted(kwargs) or ['input_signature']}.")


def check_export_backend():
    """Refuses to write a SavedModel off the TensorFlow backend, saying how to get it."""
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError("A SavedModel is written on the TensorFlow backend; this process "
                           f"runs {keras.backend.backend()!r} (set KERAS_BACKEND=tensorflow).")


class ConfiguredModel(keras.Model):
    """Base of the zoo's models: the constructor's arguments are the config.

    A subclass builds its graph in `__init__` and ends with
    `super().__init__(inputs, outputs, **kwargs)`. Around that `__init__`:

    * every argument annotated `int` or `int | None` is checked first: an
      integer ≥ 1, or ≥ the floor `INTEGER_FLOORS` gives its name (`ValueError`
      naming the argument otherwise); NumPy scalars (sizes read from data) become
      Python numbers, and lists tuples, so the config serialises as JSON;
    * each argument, defaults filled in, becomes an attribute of the same name
      (`model.memory_size`), and `get_config()` returns them all with the name
      and the dtype policy the model was built under;
    * `from_config(config)` is `cls(**config)` under that policy.

    Files saved before a model was a `ConfiguredModel` name a plain `Functional`
    model: they still load, as that.
    """

    INTEGER_FLOORS = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__:
            return
        taken = [name for name in inspect.signature(cls.__init__).parameters
                 if name != "self" and hasattr(keras.Model, name)]
        if taken:
            raise TypeError(f"{cls.__name__}'s arguments {taken} would hide attributes of "
                            "`keras.Model`; name them otherwise.")
        cls.__init__ = _recording_arguments(cls.__init__, cls.INTEGER_FLOORS)

    # Keras casts an integer input's floats to integers without a word (1.7 → 1):
    # fractional ids given as arrays are refused where they enter.
    def __call__(self, *args, **kwargs):
        if args:
            _refuse_fractional_ids(self.inputs, args[0])
        return super().__call__(*args, **kwargs)

    def fit(self, x=None, *args, **kwargs):
        _refuse_fractional_ids(self.inputs, x)
        return super().fit(x, *args, **kwargs)

    def evaluate(self, x=None, *args, **kwargs):
        _refuse_fractional_ids(self.inputs, x)
        return super().evaluate(x, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        _refuse_fractional_ids(self.inputs, x)
        return super().predict(x, *args, **kwargs)

    def compile_from_config(self, config):
        # A reloaded model compiles as it was, its own `compile` included (Keras
        # skips a subclass's custom `compile` with a warning otherwise).
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built and self.optimizer is not None:
            self.optimizer.build(self.trainable_variables)

    @classmethod
    def resolve_arguments(cls, arguments):
        """The constructor's arguments with the ones it derives filled in (a size read
        from a preprocessor); what `get_config()` records. As given by default."""
        return arguments

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.dtype_policies.serialize(self.dtype_policy),
                **{key: _as_json(value) for key, value in self.arguments.items()}}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        trainable = config.pop("trainable", True)
        policy = config.pop("dtype", None)
        config = {key: _from_json(value) for key, value in config.items()}
        # The layers take the global policy as they are built: the saved model's, for
        # as long as it is rebuilt (a `mixed_float16` run reloads in mixed precision).
        previous = keras.config.dtype_policy()
        if policy is not None:
            keras.config.set_dtype_policy(keras.dtype_policies.deserialize(policy))
        try:
            model = cls(**config)
        finally:
            keras.config.set_dtype_policy(previous)
        model.trainable = trainable
        return model


def _recording_arguments(init, floors):
    signature = inspect.signature(init)
    integer_types = {int: False, int | None: True}
    checked = {
        name: integer_types[parameter.annotation]
        for name, parameter in signature.parameters.items()
        if parameter.annotation in integer_types
    }

    # `**kwargs` carries Keras's own arguments (`name`, `trainable`): not the config.
    keras_keywords = next((name for name, parameter in signature.parameters.items()
                           if parameter.kind is inspect.Parameter.VAR_KEYWORD), None)

    @functools.wraps(init)
    def wrapped(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        keras_kwargs = bound.arguments.pop(keras_keywords, {}) if keras_keywords else {}
        arguments = {key: value for key, value in bound.arguments.items() if key != "self"}
        arguments = type(self).resolve_arguments(arguments)
        for key, allow_none in checked.items():
            arguments[key] = _validation.check_integer(
                key, arguments[key], floors.get(key, 1), allow_none=allow_none)
        arguments = {key: _plain(value) for key, value in arguments.items()}
        init(self, **arguments, **keras_kwargs)
        # The outermost class's arguments are the model's config (a subclass
        # of a subclass records its own, after its parent's).
        self.arguments = types.MappingProxyType(arguments)
        for key, value in arguments.items():
            # A layer argument (a preprocessor) is saved in the config, not tracked
            # as a sublayer: the functional graph's layers are set once built.
            if isinstance(value, keras.layers.Layer):
                object.__setattr__(self, key, value)
            else:
                setattr(self, key, value)

    # Keras reads the constructor's signature (`inspect.getfullargspec`, which
    # does not follow `__wrapped__`): it must see the model's own.
    wrapped.__signature__ = signature
    return wrapped


def _plain(value):
    """NumPy values as Python ones, lists and arrays as tuples (untracked by Keras)."""
    if isinstance(value, (np.generic, np.ndarray)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value


def _as_json(value):
    if isinstance(value, keras.layers.Layer):
        return keras.saving.serialize_keras_object(value)
    return [_as_json(v) for v in value] if isinstance(value, tuple) else value


def _from_json(value):
    """A serialised layer argument (`_as_json`'s) as the layer again."""
    if isinstance(value, dict) and "class_name" in value and "config" in value:
        return keras.saving.deserialize_keras_object(value)
    return value


def _refuse_fractional_ids(declared, given):
    """`ValueError` where an integer input (token ids) is given as a NumPy array of
    floats that are not whole numbers: Keras would cast `1.7` to `1` without a word.
    (Whole-number floats cast exactly; tensors are left to Keras.)"""
    if isinstance(given, dict):
        pairs = [(spec, given.get(spec.name)) for spec in declared]
    elif isinstance(given, (list, tuple)) and len(given) == len(declared):
        pairs = list(zip(declared, given, strict=True))
    else:
        pairs = [(declared[0], given)] if len(declared) == 1 else []
    for spec, value in pairs:
        if not isinstance(value, np.ndarray) or "int" not in str(spec.dtype):
            continue
        if value.dtype.kind == "f" and not np.all(np.isfinite(value) & (value == np.round(value))):
            raise ValueError(
                f"`{spec.name}` holds integer ids; received {value.dtype} values that are not "
                "whole numbers (such as 1.7, which would be truncated to 1). Give integer ids "
                "(`.astype('int32')` of the ids you meant).")
