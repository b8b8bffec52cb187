"""A command's flags as one typed, frozen object, made once at the command line's edge.

`argparse` hands back a mutable namespace, which anything it reaches can change
or fill in. The CLI turns it into options instead: a frozen dataclass whose
fields are the flags of that command's parser, each typed from its argument's
type (`--seed: int`, `--data: str | None`, `--jit: bool | None`), with the
task's defaults that depend on other flags resolved there, once
(`Task.resolve`). The runner and the tasks take only these; a changed copy is
`dataclasses.replace(options, seed=…)`.

    options = cli.task_options(["train", "memn2n", "--tasks", "13"])
    options.tasks, options.seed          # ('13', 0)
    options.seed = 1                     # FrozenInstanceError
"""

import argparse
import dataclasses
import typing

# Where the parser keeps its options class in the namespace (`set_defaults`).
CLASS_KEY = "_options_class"


class Options(typing.Protocol):
    """A frozen dataclass of one command's flags, made by `options_class` (the type
    the `Task` methods take)."""

    __dataclass_fields__: typing.ClassVar[dict]


def options_class(parser, name):
    """A frozen dataclass named `name` with one typed field per flag of `parser`
    (and of the commands above it: `command`, `task`, which `freeze` adds as `str`)."""
    fields = []
    for action in parser._actions:  # argparse offers no public list of a parser's flags
        skipped = action.dest in ("help", CLASS_KEY) or action.default == argparse.SUPPRESS
        if not skipped:
            fields.append((action.dest, _field_type(action)))
    return dataclasses.make_dataclass(name, fields, frozen=True, kw_only=True)


def _field_type(action):
    if isinstance(action, argparse.BooleanOptionalAction):
        kind = bool
    elif action.nargs == 0:  # store_true / store_false / store_const
        kind = type(action.const)
    elif isinstance(action.type, type):
        kind = action.type
    elif action.type is not None:
        kind = typing.get_type_hints(action.type).get("return", object)
    elif action.choices:
        kind = type(next(iter(action.choices)))
    else:
        kind = str
    if action.nargs in ("*", "+", argparse.REMAINDER):
        kind = tuple[kind, ...]
    if action.default is None and not action.required:
        kind = kind | None
    return kind


def attach(parser, name):
    """Gives `parser` its options class (call once its flags are all added)."""
    parser.set_defaults(**{CLASS_KEY: options_class(parser, name)})


def freeze(args):
    """The options of a namespace parsed by a parser that `attach` prepared."""
    values = vars(args).copy()
    cls = values.pop(CLASS_KEY)
    known = {f.name for f in dataclasses.fields(cls)}
    extra = [(key, str) for key in values if key not in known]  # command, task
    if extra:
        cls = dataclasses.make_dataclass(cls.__name__, extra, bases=(cls,), frozen=True,
                                         kw_only=True)
    return cls(**{key: tuple(v) if isinstance(v, list) else v for key, v in values.items()})


def require(options, where):
    """Refuses a raw namespace: below the CLI's edge only frozen options travel."""
    if isinstance(options, argparse.Namespace) or not dataclasses.is_dataclass(options):
        raise TypeError(f"{where} takes a task's frozen options (keras_attn.training.cli."
                        f"task_options), not {type(options).__name__}")
