"""`models/` uses `keras.ops`; TensorFlow only where a preprocessor turns text into ids
in a graph: inside the functions of its modules (`preprocessor.py`,
`preprocessor_graph.py`), imported when they run, never at module level."""

import ast
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

MODELS = pathlib.Path(__file__).resolve().parents[2] / "models"


def tensorflow_imports(tree):
    """`(node, at_module_level)` for each import of tensorflow in `tree`."""
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(n.split(".")[0] == "tensorflow" for n in names):
            yield node, id(node) in top


def test_tensorflow_only_inside_the_preprocessors_functions():
    offending = []
    for path in sorted(MODELS.rglob("*.py")):
        name = path.relative_to(MODELS).as_posix()
        preprocessor = path.stem in ("preprocessor", "preprocessor_graph")
        for node, top_level in tensorflow_imports(ast.parse(path.read_text())):
            if top_level or not preprocessor:
                offending.append(f"{name}:{node.lineno}")
    assert offending == []


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax")
def test_importing_every_models_module_loads_no_tensorflow():
    modules = [".".join(("keras_attn.models", *p.relative_to(MODELS).with_suffix("").parts))
               for p in sorted(MODELS.rglob("*.py")) if p.name != "__init__.py"]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow')[:3])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "KERAS_BACKEND": "jax"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_the_check_finds_a_module_level_import(tmp_path):
    tree = ast.parse("import numpy\nimport tensorflow as tf\ndef f():\n    import tensorflow\n")
    assert [top for _, top in tensorflow_imports(tree)] == [True, False]


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax")
def test_a_script_trains_and_generates_on_jax_without_tensorflow(tmp_path):
    # TensorFlow blocked, as on a machine without it: the models' text, training and
    # generation never need it (only a graph of strings does: a tf.data pipeline or
    # an export).
    code = (
        "import sys\n"
        "class NoTensorFlow:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'tensorflow':\n"
        "            raise ImportError('tensorflow is blocked')\n"
        "sys.meta_path.insert(0, NoTensorFlow())\n"
        "import keras\n"
        "from keras_attn.models import (MemN2NPreprocessor, MemN2NQA, Translator,\n"
        "                               TranslatorPreprocessor)\n"
        "src = ['one two', 'two three', 'three one'] * 4\n"
        "tgt = ['uno dos', 'dos tres', 'tres uno'] * 4\n"
        "pre = TranslatorPreprocessor.from_texts(src, tgt, level='word')\n"
        "model = Translator(preprocessor=pre, units=8, embedding_dim=8)\n"
        "model.compile()\n"
        "model.fit(x=src, y=tgt, epochs=1, batch_size=4, verbose=0)\n"
        "print('TRANSLATED', len(model.generate(['one two'])))\n"
        "stories = [['Mary went to the kitchen.']] * 4\n"
        "questions, answers = ['Where is Mary?'] * 4, ['kitchen'] * 4\n"
        "pre = MemN2NPreprocessor.from_texts(stories, questions, answers, memory_size=4)\n"
        "qa = MemN2NQA(preprocessor=pre, embedding_dim=8)\n"
        "qa.compile()\n"
        "qa.fit(x={'story': stories, 'question': questions}, y=answers, epochs=1,\n"
        "       verbose=0)\n"
        "print('ANSWERED', qa.generate(stories[:1], questions[:1]))\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow')\n"
        "print('BACKEND', keras.backend.backend(), 'TF_MODULES', loaded[:3])\n"
    )
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "TRANSLATED 1" in result.stdout
    assert "BACKEND jax TF_MODULES []" in result.stdout
