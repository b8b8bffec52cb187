"""The NTM and DNC exports, TensorFlow-only loading and serving, and `predict` (TensorFlow backend)."""

import json
import os

import numpy as np
import pytest

from keras_attn.training.errors import UsageError
from keras_attn.training.tasks.ntm.algorithmic import copy_batch
from tests.training.serving import (
    TENSORFLOW_BACKEND_ONLY,
    saved_model_cli_run,
    session_run,
    tf_only,
)

pytestmark = TENSORFLOW_BACKEND_ONLY


@pytest.fixture(scope="module", params=["ntm-copy", "dnc-copy"])
def trained(request, tmp_path_factory):
    """A small copy NTM (and DNC) trained for a few steps, exported."""
    from keras_attn.training import cli

    name = request.param
    root = tmp_path_factory.mktemp(name)
    work, out = str(root / "work"), str(root / "saved_models")
    cli.main(["train", name, "--memory-size", "16", "--memory-width", "6",
              "--controller-units", "16", "--batch-size", "4", "--sequences", "8",
              "--check-every", "4", "--test-sequences", "2", "--patience", "0",
              # XLA would compile each test length for minutes; the export is under test
              # (it traces its own graph), and test_ntm_cli trains with the default.
              "--no-jit", "--work-dir", work, "--output-dir", out, "--quiet"])
    return {"name": name, "work": work, "export": os.path.join(out, name, "1"), "root": out}


def _serve(export, sequence):
    import tensorflow as tf

    serve = tf.saved_model.load(export).signatures["serving_default"]
    return {k: v.numpy() for k, v in serve(sequence=tf.constant(sequence, tf.float32)).items()}


def _keras_outputs(work, sequence):
    from keras_attn.models.ntm import with_weightings
    from keras_attn.training.runner import load_run

    _, model, _, _ = load_run(work)
    return [np.asarray(t) for t in with_weightings(model).predict(sequence, verbose=0)]


def test_export_layout(trained):
    extra = os.path.join(trained["export"], "assets.extra")
    assert os.path.exists(os.path.join(trained["export"], "saved_model.pb"))
    for name in ("model.keras", "meta.json", "curve.json"):
        assert os.path.exists(os.path.join(extra, name)), name
    meta = json.load(open(os.path.join(extra, "meta.json")))
    assert meta["task"] == trained["name"] and meta["settings"]["input_bits"] == 9


def test_tensorflow_only_process_matches_keras_beyond_the_trained_lengths(trained, tmp_path):
    # Trained on lengths 1–20 (41 steps): serve length 60, 121 steps.
    x, _ = copy_batch(np.random.default_rng(5), 3, 60)
    path = tmp_path / "x.npy"
    np.save(path, x)
    out = tf_only(f"""
        import json
        import numpy as np
        import tensorflow as tf
        serve = tf.saved_model.load({trained['export']!r}).signatures["serving_default"]
        out = serve(sequence=tf.constant(np.load({str(path)!r})))
        np.savez({str(tmp_path / 'out.npz')!r}, **{{k: v.numpy() for k, v in out.items()}})
        print(sorted(out))
    """, tmp_path)
    assert "['output', 'read_weightings', 'valid', 'write_weightings']" in out
    got = np.load(tmp_path / "out.npz")
    probabilities, reads, writes = _keras_outputs(trained["work"], x)
    assert got["output"].shape == (3, 121, 8) and got["write_weightings"].shape == (3, 121, 1, 16)
    np.testing.assert_allclose(got["output"], probabilities, atol=1e-5)
    np.testing.assert_allclose(got["read_weightings"], reads, atol=1e-5)
    np.testing.assert_allclose(got["write_weightings"], writes, atol=1e-5)
    if trained["name"].startswith("ntm-"):
        np.testing.assert_allclose(got["write_weightings"].sum(-1), 1.0, atol=1e-4)
    else:  # the DNC's write weighting sums to its write gate, in [0, 1]
        assert np.all(got["write_weightings"].sum(-1) <= 1 + 1e-4)
    assert got["valid"].all()


def test_session_loader_as_tf_serving_does(trained, tmp_path):
    out = session_run(trained["export"], {"sequence": np.zeros((2, 7, 9), np.float32)}, tmp_path)
    assert sorted(out) == ["output", "read_weightings", "valid", "write_weightings"]
    assert np.shape(out["output"]) == (2, 7, 8)
    assert np.shape(out["read_weightings"]) == (2, 7, 1, 16)


def test_saved_model_cli_run(trained):
    out = saved_model_cli_run(trained["export"], "sequence=" + str([[[0.0] * 8 + [1.0]] * 5]))
    assert "output" in out and "write_weightings" in out


def test_bad_inputs_have_defined_results_at_the_signature(trained):
    import tensorflow as tf

    x, _ = copy_batch(np.random.default_rng(1), 2, 4)
    for wrong in (x[0], x[None]):  # [steps, bits] and [1, batch, steps, bits]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"`sequence` must be \[batch, steps, 9\]"):
            _serve(trained["export"], wrong)
    clean = _serve(trained["export"], x)
    x[0, 2, 3] = np.nan
    out = _serve(trained["export"], x)
    np.testing.assert_array_equal(out["valid"], [False, True])
    for key in ("output", "read_weightings", "write_weightings"):
        assert np.all(out[key][0] == 0), key  # the sequence with a NaN is not run
        np.testing.assert_allclose(out[key][1], clean[key][1], atol=1e-6)  # the other is
    x[1, 0, 0] = np.inf
    assert not _serve(trained["export"], x)["valid"].any()
    empty = _serve(trained["export"], np.zeros((2, 0, 9), np.float32))
    assert empty["output"].shape == (2, 0, 8) and empty["write_weightings"].shape == (2, 0, 1, 16)
    assert empty["valid"].all()
    import tensorflow as tf

    with pytest.raises(tf.errors.InvalidArgumentError, match="9 channels a step"):
        _serve(trained["export"], np.zeros((1, 5, 8), np.float32))


def test_predict_prints_bit_errors_and_plots(trained, tmp_path, capsys):
    from keras_attn.training import cli

    plot = str(tmp_path / "ntm.png")
    cli.main(["predict", os.path.dirname(trained["export"]), "--length", "6",
                       "--plot", plot])
    printed = capsys.readouterr().out
    assert f"{trained['name']} (length 6): 13 steps" in printed
    assert "bit errors: " in printed and " of 48 output bits" in printed
    assert os.path.getsize(plot) > 1000
    sequence = tmp_path / "seq.txt"
    np.savetxt(sequence, copy_batch(np.random.default_rng(0), 1, 3)[0][0], fmt="%d")
    cli.main(["predict", trained["export"], "--sequence-file", str(sequence)])
    printed = capsys.readouterr().out
    assert "output bits (a line per channel):" in printed and "7 steps" in printed


@pytest.mark.parametrize("rows, flags, message", [
    (np.zeros((4, 8)), [], r"\(steps, 9\)"),
    (np.full((4, 9), np.nan), [], "NaN or infinite"),
    (np.zeros((0, 9)), [], "has no steps"),
    (None, ["--items", "3"], r"takes \['--length', "),
])
def test_predict_refuses_bad_input_clearly(trained, tmp_path, rows, flags, message):
    from keras_attn.training import cli

    if rows is not None:
        path = tmp_path / "seq.npy"
        np.save(path, rows)
        flags = ["--sequence-file", str(path)]
    with pytest.raises(UsageError, match=message):
        cli.main(["predict", trained["export"], *flags])


def test_evaluate_on_the_run_and_on_the_export(trained, capsys):
    from keras_attn.training import cli

    cli.main(["evaluate", trained["name"], "--run-dir", trained["work"]])
    on_run = capsys.readouterr().out
    cli.main(["evaluate", trained["name"], "--run-dir",
              os.path.join(trained["export"], "assets.extra")])
    assert on_run.splitlines()[1:] == capsys.readouterr().out.splitlines()[1:]
    assert "length 40" in on_run
