"""The package list, discovered: the metadata is in setup.cfg.

`models/` and `training/` install as `keras_attn.models` and `keras_attn.training`
(setup.cfg's `package_dir`), which `packages = find:` cannot express; so every
folder with an `__init__.py` under the three roots is listed here, and a new task
folder under `training/tasks/` needs no edit elsewhere.
"""

from setuptools import find_packages, setup

ROOTS = {"keras_attn": "keras_attn", "models": "keras_attn.models",
         "training": "keras_attn.training"}


def packages():
    found = []
    for folder, name in ROOTS.items():
        found += [name] + [f"{name}.{sub}" for sub in find_packages(folder)]
    return sorted(found)


setup(packages=packages())
