"""Argument types for the CLI: a bad number stops at the parser, naming the flag.

argparse reports an `ArgumentTypeError` as `argument --flag: <message>` and exits
with status 2, before anything is built or trained.
"""

import argparse
import math


def _number(text, kind):
    noun = "an integer" if kind is int else "a finite number"
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {noun}; received {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be {noun}; received {text!r}")
    return value


def _checked(kind, accept, expected):
    def parse(text):
        value = _number(text, kind)
        if not accept(value):
            raise argparse.ArgumentTypeError(f"must be {expected}; received {text}")
        return value

    parse.__name__ = expected  # what argparse would name the type
    parse.__annotations__ = {"return": kind}  # the options' field type (training.options)
    return parse


positive_int = _checked(int, lambda x: x >= 1, "an integer ≥ 1")
non_negative_int = _checked(int, lambda x: x >= 0, "an integer ≥ 0")
positive_float = _checked(float, lambda x: x > 0, "a number > 0")
non_negative_float = _checked(float, lambda x: x >= 0, "a number ≥ 0")
fraction = _checked(float, lambda x: 0 < x < 1, "a number strictly between 0 and 1")
probability = _checked(float, lambda x: 0 <= x < 1, "a number in [0, 1)")
port = _checked(int, lambda x: 1 <= x <= 65535, "a port number, 1 … 65535")


def positive_int_or_auto(text):
    """`"auto"` (the value then depends on the data), or an integer ≥ 1."""
    if text == "auto":
        return "auto"
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be an integer ≥ 1 or 'auto'; received {text!r}") from None


positive_int_or_auto.__annotations__ = {"return": int | str}
