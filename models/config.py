"""Checks shared by the models' config dataclasses."""

import dataclasses

from keras_attn import _validation

_INT = (int, "int")
_OPTIONAL_INT = (int | None, "int | None")


def check_integer_fields(config, floors=None):
    """Checks every `int` and `int | None` field of the dataclass `config`.

    Each must be an integer ≥ its floor (1 unless `floors` maps the field's name
    to another), else `ValueError` naming the field. NumPy integers (sizes read
    from data) are stored back as Python `int`s, so the config serialises.
    """
    floors = floors or {}
    for field in dataclasses.fields(config):
        if field.type not in _INT + _OPTIONAL_INT:
            continue
        value = _validation.check_integer(
            field.name, getattr(config, field.name), floors.get(field.name, 1),
            allow_none=field.type in _OPTIONAL_INT,
        )
        setattr(config, field.name, value)
