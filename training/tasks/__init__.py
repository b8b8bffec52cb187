"""The task registry: a task name → what training, evaluating and exporting it needs.

Adding a model means adding one `Task` here (and its module), not editing the CLI.
A task module must not import TensorFlow: export code is imported lazily, and runs
on the TensorFlow backend (in a subprocess when training ran on another backend).
"""

import dataclasses
import importlib
from typing import Callable


@dataclasses.dataclass(frozen=True)
class Task:
    """One entry of the registry.

    Attributes:
        name: the CLI name (`keras-attn train NAME`).
        summary: one line for `--help`.
        add_arguments: `fn(argparse parser)` adding the task's flags.
        train: `fn(args) → run` training, evaluating and (unless `--no-export`)
            exporting; returns a dict of figures.
        evaluate: `fn(args) → dict` of figures for a trained model directory.
        export: `fn(run_dir, export_root) → version path`, on the TF backend.
    """

    name: str
    summary: str
    add_arguments: Callable
    train: Callable
    evaluate: Callable
    export: Callable


def _translator():
    from training.tasks import translator

    return Task(
        name="translator",
        summary="seq2seq translator with Bahdanau/Luong attention (default: dates → ISO)",
        add_arguments=translator.add_arguments,
        train=translator.train,
        evaluate=translator.evaluate,
        export=translator.export,
    )


def _memn2n():
    from training.tasks import memn2n

    return Task(
        name="memn2n",
        summary="end-to-end memory network, bAbI-format QA (default: built-in stories)",
        add_arguments=memn2n.add_arguments,
        train=memn2n.train,
        evaluate=memn2n.evaluate,
        export=memn2n.export,
    )


def _family(module_name, name):
    """A task of a module that holds several (`TASKS[name]`, flags per task)."""

    def factory():
        module = importlib.import_module(f"training.tasks.{module_name}")
        return Task(
            name=name,
            summary=module.TASKS[name].summary,
            add_arguments=lambda parser: module.add_arguments(parser, name),
            train=module.train,
            evaluate=module.evaluate,
            export=module.export,
        )

    return factory


_FACTORIES = {
    "translator": _translator,
    "memn2n": _memn2n,
    **{name: _family("ntm", name) for name in (
        "ntm-copy", "ntm-repeat-copy", "ntm-associative-recall", "ntm-priority-sort",
        "dnc-copy", "dnc-repeat-copy",
    )},
    **{name: _family("pointer", name) for name in ("pointer-sort", "pointer-hull", "pointer-tsp")},
}


def names():
    return sorted(_FACTORIES)


def get(name):
    if name not in _FACTORIES:
        raise ValueError(f"Unknown task {name!r}; expected one of {names()}.")
    return _FACTORIES[name]()
