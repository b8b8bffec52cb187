"""`models/` uses `keras.ops`; TensorFlow only where a preprocessor turns text into ids
in a graph (its graph methods and the `text_graph` modules they import lazily)."""

import ast
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

MODELS = pathlib.Path(__file__).resolve().parents[2] / "models"
# The preprocessors' graph string handling, imported only from their methods.
GRAPH_TEXT = {"text_graph.py", "memn2n/text_graph.py"}
PREPROCESSORS = {"translator/preprocessor.py", "memn2n/preprocessor.py"}


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


def _graph_text_imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("text_graph"):
            yield node, node in tree.body


def test_tensorflow_only_in_the_preprocessors_string_handling():
    offending = []
    for path in sorted(MODELS.rglob("*.py")):
        name = path.relative_to(MODELS).as_posix()
        tree = ast.parse(path.read_text())
        for node, top_level in tensorflow_imports(tree):
            if name in GRAPH_TEXT or (name in PREPROCESSORS and not top_level):
                continue
            offending.append(f"{name}:{node.lineno} imports tensorflow")
        if name not in GRAPH_TEXT:
            for node, top_level in _graph_text_imports(tree):
                if name not in PREPROCESSORS or top_level:
                    offending.append(f"{name}:{node.lineno} imports {node.module}")
    assert offending == []


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
