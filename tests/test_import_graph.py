"""The import graph of `keras_attn`, `models/` and `training/` has no circle, the imports
inside functions included (import-linter's contracts see module-level imports only)."""

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Folder in the repository → its package once installed (setup.py's layout).
PACKAGES = {"keras_attn": "keras_attn", "models": "keras_attn.models",
            "training": "keras_attn.training"}


def modules(root):
    """Every module's dotted name → its file."""
    found = {}
    for folder, package in PACKAGES.items():
        for directory, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(directory, name)
                parts = os.path.relpath(path, os.path.join(root, folder))[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                found[".".join([package, *parts])] = path
    return found


def import_graph(found):
    """Module → the project's modules it imports, anywhere in its body."""
    graph = {}
    for module, path in found.items():
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name in found}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                for alias in node.names:
                    name = f"{base}.{alias.name}"
                    if name in found:
                        targets.add(name)
                    elif base in found:
                        targets.add(base)
        graph[module] = targets - {module}
    return graph


def a_circle(graph):
    """One circle of `graph` as a list of modules, or `None`."""
    state, path = {}, []

    def visit(module):
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                circle = visit(target)
                if circle:
                    return circle
        state[module] = "done"
        path.pop()
        return None

    for module in sorted(graph):
        if module not in state:
            circle = visit(module)
            if circle:
                return circle
    return None


def test_the_project_has_no_import_circle():
    graph = import_graph(modules(ROOT))
    assert len(graph) > 50 and sum(map(len, graph.values())) > 200  # the walk found them
    assert "keras_attn.training.runner" in graph["keras_attn.training.cli"]
    assert a_circle(graph) is None, " → ".join(a_circle(graph))


def test_a_circle_through_a_function_local_import_is_found(tmp_path):
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "__init__.py").write_text("")
    (tmp_path / "training" / "task.py").write_text(
        "from keras_attn.training import predict\n")
    (tmp_path / "training" / "predict.py").write_text(
        "def run():\n    from keras_attn.training.task import Task\n")
    circle = a_circle(import_graph(modules(str(tmp_path))))
    assert circle == ["keras_attn.training.predict", "keras_attn.training.task",
                      "keras_attn.training.predict"]
