"""MkDocs hook: one API page per public module, and the API section of the nav.

The modules are found in the source tree (the layer library in `keras_attn/`, the
models in `models/`, the training side in `training/`, installed as
`keras_attn.models` and `keras_attn.training`), so a new module or task folder
gets its page without an edit here or in `mkdocs.yml`. A hand-written
`docs/api/<page>.md` is kept as it is.
"""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# (section title, source folder, its package, whether its subpackages go in it too)
SECTIONS = (
    ("Layers", "keras_attn", "keras_attn", False),
    ("Efficient attention", "keras_attn/efficient", "keras_attn.efficient", True),
    ("Positions", "keras_attn/positional", "keras_attn.positional", True),
    ("Memory", "keras_attn/memory", "keras_attn.memory", True),
    ("Models", "models", "keras_attn.models", True),
    ("Training", "training", "keras_attn.training", True),
)


def _public(name):
    return not name.startswith(("_", "."))


def modules(folder, package, recursive):
    """Public modules of `folder` as dotted names under `package`, sorted."""
    found = []
    for entry in sorted(os.listdir(os.path.join(ROOT, folder))):
        path = os.path.join(ROOT, folder, entry)
        if entry.endswith(".py") and _public(entry):
            found.append(f"{package}.{entry[:-3]}")
        elif (recursive and os.path.isdir(path) and _public(entry)
              and os.path.exists(os.path.join(path, "__init__.py"))):
            if _defines_something(os.path.join(path, "__init__.py")):
                found.append(f"{package}.{entry}")
            found += modules(f"{folder}/{entry}", f"{package}.{entry}", True)
    return found


def _defines_something(init_file):
    """Whether a package's `__init__.py` holds code of its own (not only imports)."""
    with open(init_file, encoding="utf-8") as f:
        return any(line.startswith(("def ", "class ")) for line in f)


def api_nav():
    """`[{section: [{module: page}]}]`, every public module in its section."""
    return [{title: [{name: page_of(name)} for name in modules(folder, package, recursive)]}
            for title, folder, package, recursive in SECTIONS]


def page_of(module):
    return "api/" + module.removeprefix("keras_attn.").replace(".", "_") + ".md"


def on_config(config):
    config["nav"] = [entry for entry in config["nav"] if "API" not in entry]
    config["nav"].append({"API": api_nav()})
    return config


def on_files(files, config):
    from mkdocs.structure.files import File  # here: the nav's functions need no MkDocs

    for section in api_nav():
        for entry in next(iter(section.values())):
            (module, page), = entry.items()
            if files.get_file_from_path(page) is None:
                content = f"# `{module}`\n\n::: {module}\n"
                files.append(File.generated(config, page, content=content))
    return files
