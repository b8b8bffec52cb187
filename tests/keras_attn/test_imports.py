"""`keras_attn` is backend-neutral: no TensorFlow import, no `tf.` anywhere in it."""

import ast
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "keras_attn"


def test_no_tensorflow_in_the_source():
    from tests.models.test_tensorflow_boundary import tensorflow_imports

    for path in PACKAGE.rglob("*.py"):
        found = [node.lineno for node, _ in tensorflow_imports(ast.parse(path.read_text()))]
        assert found == [], (path, found)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax not installed")
def test_importing_on_jax_does_not_load_tensorflow():
    code = (
        "import sys, keras_attn, numpy as np;"
        "keras_attn.MultiHeadAttention(2, 4)(np.ones((1, 3, 8), 'float32'), np.ones((1, 3, 8), 'float32'));"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow');"
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
