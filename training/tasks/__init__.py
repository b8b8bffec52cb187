"""The task registry: every task's name → its `Task`.

Adding a model is one folder here, whose `__init__.py` lists its tasks in
`TASKS`: the folders are found at run time, and the CLI and the runner name no
task.
`register` adds a task from anywhere else (a plug-in, a test).
"""

import importlib
import pkgutil

from keras_attn.training.task import Task

#: Every task family: each package in this folder.
FAMILIES = tuple(f"{__name__}.{module.name}" for module in pkgutil.iter_modules(__path__)
                 if module.ispkg)

_registered = {}
_families_loaded = []


def _load():
    if not _families_loaded:
        _families_loaded.append(True)
        for family in FAMILIES:
            for task in importlib.import_module(family).TASKS:
                _registered.setdefault(task.name, task)
    return _registered


def register(task):
    """Adds `task` (a `Task`) under its name; returns it."""
    if not isinstance(task, Task):
        raise TypeError(f"`task` must be a keras_attn.training.task.Task; received {task!r}.")
    _load()[task.name] = task
    return task


def unregister(name):
    _load().pop(name, None)


def names():
    return sorted(_load())


def get(name):
    tasks = _load()
    if name not in tasks:
        raise ValueError(f"Unknown task {name!r}; expected one of {sorted(tasks)}.")
    return tasks[name]
