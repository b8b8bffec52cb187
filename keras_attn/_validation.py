"""Argument checks shared by the layers: clear errors instead of deep backend ones."""

import math
import numbers

import keras


def static_shape(x):
    """The static shape of a tensor, KerasTensor or array, as a tuple."""
    return tuple(x.shape)


def check_integer(name, value, least=1, allow_none=False):
    """`value` as a Python `int`, or `ValueError` unless it is an integer `≥ least`.

    Python and NumPy integers pass (not bools, not floats such as `2.5` that
    `int()` would silently truncate). The message says "a positive integer" for
    `least=1`, else "an integer ≥ least" (`least=None`: any integer). With
    `allow_none`, `None` passes too.
    """
    if value is None and allow_none:
        return None
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or (least is not None and value < least)):
        expected = ("an integer" if least is None else "a positive integer" if least == 1
                    else f"an integer ≥ {least}")
        if allow_none:
            expected += " or None"
        raise ValueError(f"`{name}` must be {expected}; received {value!r}.")
    return int(value)


def check_number(name, value, low=0.0, low_inclusive=False, high=None, allow_none=False):
    """`value` as a Python `float`, or `ValueError` unless it is a finite real number
    above `low` (or equal to it with `low_inclusive`) and below `high`.

    `low=None` and `high=None` drop that bound. Bools, strings, NaN and ±inf fail;
    with `allow_none`, `None` passes (returned as `None`).
    """
    if value is None and allow_none:
        return None
    ok = (
        not isinstance(value, bool)
        and isinstance(value, numbers.Real)
        and math.isfinite(value)
        and (low is None or value > low or (low_inclusive and value == low))
        and (high is None or value < high)
    )
    if not ok:
        if low is not None and high is not None:
            expected = f"a number in {'[' if low_inclusive else '('}{low:g}, {high:g})"
        elif low is not None:
            expected = f"a number {'≥' if low_inclusive else '>'} {low:g}"
        elif high is not None:
            expected = f"a number < {high:g}"
        else:
            expected = "a finite number"
        if allow_none:
            expected += " or None"
        raise ValueError(f"`{name}` must be {expected}; received {value!r}.")
    return float(value)


def check_dtype(kind, layer=None, **tensors):
    """`TypeError` unless every tensor given (`None` and Python lists skipped) has a
    dtype of `kind`: `"floating"` (float16/32/64, bfloat16) or `"integer"`.

    Layers cast their weights to the inputs' dtype; integer inputs would otherwise
    fail deep inside a backend op (a softmax over int32) or silently truncate.
    """
    for name, x in tensors.items():
        dtype = getattr(x, "dtype", None)
        if dtype is None:
            continue
        dtype = keras.backend.standardize_dtype(dtype)
        ok = keras.backend.is_float_dtype(dtype) if kind == "floating" else (
            keras.backend.is_int_dtype(dtype)
        )
        if not ok:
            where = f"{layer}: " if layer else ""
            article = "a floating-point" if kind == "floating" else "an integer"
            raise TypeError(
                f"{where}`{name}` must be {article} tensor; received dtype {dtype}."
            )


def check_rank(name, shape, ranks, layer=None):
    """Raises `ValueError` unless `len(shape)` is one of `ranks`."""
    if shape is None:
        return
    ranks = (ranks,) if isinstance(ranks, int) else tuple(ranks)
    if len(shape) not in ranks:
        expected = " or ".join(str(r) for r in ranks)
        where = f"{layer}: " if layer else ""
        raise ValueError(
            f"{where}`{name}` must have rank {expected}; received `{name}` of "
            f"rank {len(shape)} with shape {tuple(shape)}."
        )


def check_same_dim(name_a, shape_a, axis_a, name_b, shape_b, axis_b, what, layer=None):
    """Raises `ValueError` if two known static dimensions differ."""
    if shape_a is None or shape_b is None:
        return
    dim_a, dim_b = shape_a[axis_a], shape_b[axis_b]
    if dim_a is not None and dim_b is not None and dim_a != dim_b:
        where = f"{layer}: " if layer else ""
        raise ValueError(
            f"{where}`{name_a}` and `{name_b}` must have the same {what}; received "
            f"`{name_a}` of shape {tuple(shape_a)} and `{name_b}` of shape "
            f"{tuple(shape_b)}."
        )


def check_query_key_value(query_shape, value_shape, key_shape, query_ranks, layer=None):
    """Ranks, one batch size, and as many keys as values (`key_shape` may be `None`)."""
    check_rank("query", query_shape, query_ranks, layer)
    check_rank("value", value_shape, 3, layer)
    check_same_dim("query", query_shape, 0, "value", value_shape, 0, "batch size", layer)
    if key_shape is not None:
        check_rank("key", key_shape, 3, layer)
        check_same_dim("key", key_shape, 0, "value", value_shape, 0, "batch size", layer)
        check_same_dim("key", key_shape, 1, "value", value_shape, 1, "length", layer)


def check_padding_masks(query_shape, value_shape, layer=None, **masks):
    """`query_mask` must be `(B, Tq)`; `value_mask` and `key_mask` `(B, Tk)`."""
    for name, mask in masks.items():
        length = query_shape[1] if name == "query_mask" else value_shape[1]
        check_mask(name, mask, [(value_shape[0], length)], layer)


def check_precomputed_keys(precomputed_keys, key_shape, size, layer=None):
    """`precomputed_keys` must be `(B, Tk, size)` for keys of shape `(B, Tk, dk)`.

    `size` is what the score's `precompute_keys` gives a key (e.g. `units` for the
    additive score); unknown (`None`) dimensions match anything.
    """
    shape = static_shape(precomputed_keys)
    expected = (key_shape[0], key_shape[1], size)
    if len(shape) == 3 and all(
        e is None or s is None or s == e for s, e in zip(shape, expected, strict=True)
    ):
        return
    where = f"{layer}: " if layer else ""
    raise ValueError(
        f"{where}`precomputed_keys` must have shape {expected}, what "
        f"`precompute_keys(key)` returns for a key of shape {tuple(key_shape)}; "
        f"received `precomputed_keys` of shape {shape}."
    )


def check_mask(name, mask, expected_shapes, layer=None):
    """Checks a mask's rank and known dims against candidate shapes.

    `expected_shapes` lists the acceptable shapes (with `None` for any size), e.g.
    `[(B, Tk), (B, Tq, Tk)]`.
    """
    if mask is None:
        return
    shape = static_shape(mask)
    for expected in expected_shapes:
        if len(shape) != len(expected):
            continue
        if all(
            e is None or s is None or s == e or s == 1 for s, e in zip(shape, expected, strict=True)
        ):
            return
    where = f"{layer}: " if layer else ""
    options = " or ".join(str(tuple(e)) for e in expected_shapes)
    raise ValueError(
        f"{where}`{name}` must have shape {options} (None: any size; 1 broadcasts); "
        f"received `{name}` of shape {shape}."
    )


def check_attention_mask(mask, query, value, layer=None):
    """An explicit attention mask must be `(B, Tk)` or `(B, Tq, Tk)`."""
    batch, keys = value.shape[0], value.shape[1]
    check_mask("mask", mask, [(batch, keys), (batch, query.shape[1], keys)], layer)


def keras_mask_of(x):
    """The Keras padding mask carried by `x`, or `None`.

    Keras has no public accessor; this is the one its own `MultiHeadAttention`
    uses, and it works for every backend's tensors. If a Keras upgrade moves it,
    `tests/keras_attn/test_attention.py::test_keras_mask_propagation_from_embedding`
    fails on the import.
    """
    from keras.src.backend import get_keras_mask

    return get_keras_mask(x)


def query_output_mask(query):
    """Output mask of an attention layer: the query's padding, if it has time steps."""
    return keras_mask_of(query) if len(query.shape) == 3 else None


def refuse_memory_arguments(layer_name, kwargs):
    """`ValueError` for TF-Addons' constructor arguments `memory` and
    `memory_sequence_length`, named with the value's shape (never the whole array,
    which Keras's own "unrecognized keyword arguments" error would print)."""
    given = [name for name in ("memory", "memory_sequence_length") if name in kwargs]
    if given:
        shapes = ", ".join(f"{name} of shape {tuple(getattr(kwargs[name], 'shape', ()))}"
                           for name in given)
        raise ValueError(
            f"{layer_name} takes the memory when called, not in its constructor (TF-Addons' "
            f"habit): call it as `layer(query, values, mask=...)`, the mask for "
            f"`memory_sequence_length`; received {shapes}.")
