"""Load an export the way a server does, for the export tests of every task.

- `tf_only`: a fresh interpreter that sees TensorFlow but not keras_attn, Keras's
  site-packages or this checkout;
- `session_run`: TF Serving's route, the TF1 SavedModel loader in a `Session`;
- `saved_model_cli_run`: TensorFlow's own command-line client.
"""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

#: `pytestmark` of every export test file: exporting needs the TensorFlow backend.
TENSORFLOW_BACKEND_ONLY = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="export runs on the TensorFlow backend"
)


def tf_only(code, cwd):
    """Runs `code` in a fresh interpreter that sees TensorFlow but not keras_attn."""
    import tensorflow as tf

    site = os.path.dirname(os.path.dirname(tf.__file__))
    prelude = (
        f"import sys; sys.path[:] = [p for p in sys.path if 'site-packages' not in p] + [{site!r}]\n"
        "import importlib.util\n"
        "if importlib.util.find_spec('keras_attn'):\n"
        "    raise SystemExit('keras_attn should not be importable here')\n"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", prelude + textwrap.dedent(code)],
        capture_output=True, text=True, cwd=cwd, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ""},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def session_run(export, feeds, cwd, signature="serving_default"):
    """Runs `signature` of `export` in a TF-only `Session`, as TF Serving loads a model.

    `feeds` maps each input name to a numpy array (text as a str array). Returns
    every output of the signature by name, as nested lists (strings decoded).
    """
    np.savez(os.path.join(cwd, "feeds.npz"), **{name: np.asarray(v) for name, v in feeds.items()})
    out = tf_only(f"""
        import json
        import numpy as np
        import tensorflow as tf
        tf.compat.v1.disable_eager_execution()
        arrays = dict(np.load("feeds.npz"))
        with tf.compat.v1.Session(graph=tf.Graph()) as sess:
            meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], {export!r})
            sig = meta.signature_def[{signature!r}]
            feed = {{sig.inputs[name].name: np.char.encode(a, "utf-8") if a.dtype.kind == "U" else a
                     for name, a in arrays.items()}}
            fetch = {{name: t.name for name, t in sig.outputs.items()}}
            result = sess.run(fetch, feed)
        print(json.dumps({{k: np.asarray(v).tolist() for k, v in result.items()}},
                         default=lambda b: b.decode("utf-8")))
    """, cwd)
    return json.loads(out.strip().splitlines()[-1])


def saved_model_cli_run(export, input_exprs, signature="serving_default"):
    """`saved_model_cli run` on `export` with `--input_exprs`; returns its stdout."""
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    result = subprocess.run(
        [cli, "run", "--dir", export, "--tag_set", "serve",
         "--signature_def", signature, "--input_exprs", input_exprs],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def assert_story_question_checks(serve):
    """The input checks of a bAbI export's `serve(story, question)`: each argument a 1-D
    string tensor, both of one batch size, each failure an in-graph error naming it."""
    import tensorflow as tf

    for wrong in ("a", [["a"]], [[["a"]]]):
        with pytest.raises(tf.errors.InvalidArgumentError, match="`story` must be a 1-D string"):
            serve(wrong, ["x"])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="`question` must be a 1-D string"):
            serve(["a"], wrong)
    with pytest.raises(tf.errors.InvalidArgumentError, match="the same batch size"):
        serve(["a", "b"], ["x"])
