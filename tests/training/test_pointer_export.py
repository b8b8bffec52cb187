"""The pointer-network export: TensorFlow-only loading and serving, bad input at the
signature, and `predict` (TensorFlow backend)."""

import json
import os

import numpy as np
import pytest

from keras_attn.training.errors import UsageError
from tests.training.serving import (
    TENSORFLOW_BACKEND_ONLY,
    saved_model_cli_run,
    session_run,
    tf_only,
)

pytestmark = TENSORFLOW_BACKEND_ONLY


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A small TSP pointer network (beam 3, shortest tour of the beam), exported."""
    from keras_attn.training import cli

    root = tmp_path_factory.mktemp("pointer")
    work, out = str(root / "work"), str(root / "saved_models")
    cli.main(["train", "pointer-tsp", "--units", "16", "--encoder-layers", "1", "--heads", "2",
              "--train-instances", "64", "--validation-instances", "32", "--epochs", "1",
              "--batch-size", "32", "--test-instances", "10", "--test-sizes", "5", "--beam-width", "3",
              "--supported-points", "12", "--work-dir", work, "--output-dir", out, "--quiet"])
    return {"work": work, "export": os.path.join(out, "pointer-tsp", "1")}


def _serve(export, points, lengths=None, signature="serving_default"):
    import tensorflow as tf

    serve = tf.saved_model.load(export).signatures[signature]
    feed = {"points": tf.constant(points, tf.float32)}
    if lengths is not None:
        feed["lengths"] = tf.constant(lengths, tf.int32)
    return {k: v.numpy() for k, v in serve(**feed).items()}


def test_export_layout(trained):
    extra = os.path.join(trained["export"], "assets.extra")
    for name in ("model.keras", "meta.json", "history.json"):
        assert os.path.exists(os.path.join(extra, name)), name
    meta = json.load(open(os.path.join(extra, "meta.json")))
    settings = meta["settings"]
    assert meta["task"] == "pointer-tsp" and settings["beam_width"] == 3
    assert settings["max_points"] == 12


def test_tensorflow_only_process_matches_keras_on_mixed_lengths(trained, tmp_path):
    from keras import ops

    from keras_attn.models.pointer_net import decode
    from keras_attn.training.runner import load_run

    rng = np.random.default_rng(4)
    points = rng.random((5, 9, 2)).astype("float32")
    lengths = np.array([9, 5, 7, 3, 8], "int32")
    np.save(tmp_path / "points.npy", points)
    np.save(tmp_path / "lengths.npy", lengths)
    out = tf_only(f"""
        import numpy as np
        import tensorflow as tf
        serve = tf.saved_model.load({trained['export']!r}).signatures["serving_default"]
        out = serve(points=tf.constant(np.load("points.npy")),
                    lengths=tf.constant(np.load("lengths.npy")))
        np.savez("out.npz", **{{k: v.numpy() for k, v in out.items()}})
        print(sorted(out))
    """, tmp_path)
    assert "['indices', 'log_prob', 'pointer', 'valid']" in out
    got = np.load(tmp_path / "out.npz")
    _, model, _, _ = load_run(trained["work"])
    want = decode(model, points, lengths, beam_width=3, select="tour_length")
    np.testing.assert_array_equal(got["indices"], ops.convert_to_numpy(want["indices"]))
    np.testing.assert_allclose(got["log_prob"], ops.convert_to_numpy(want["log_prob"]), atol=1e-4)
    assert got["valid"].all()
    for row, n in zip(got["indices"], lengths, strict=True):
        assert row[0] == 0 and sorted(row[row >= 0]) == list(range(n))


def test_session_loader_as_tf_serving_does(trained, tmp_path):
    feeds = {"points": np.random.default_rng(2).random((2, 6, 2)).astype("float32"),
             "lengths": np.array([6, 4], "int32")}
    out = session_run(trained["export"], feeds, tmp_path)
    assert sorted(out) == ["indices", "log_prob", "pointer", "valid"]
    rows = out["indices"]
    assert sorted(rows[0]) == [0, 1, 2, 3, 4, 5] and sorted(rows[1]) == [-1, -1, 0, 1, 2, 3]


def test_saved_model_cli_run(trained):
    points = [[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.5, 0.2]]]
    out = saved_model_cli_run(trained["export"], "points=" + str(points), signature="all_points")
    assert "indices" in out and "log_prob" in out


def test_bad_inputs_have_defined_results_at_the_signature(trained):
    import tensorflow as tf

    rng = np.random.default_rng(2)
    points = rng.random((5, 6, 2)).astype("float32")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"`points` must be \[batch, N, 2\]"):
        _serve(trained["export"], points[0], [6])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"`lengths` must be \[batch\]"):
        _serve(trained["export"], points[:1], [[6]])
    clean = _serve(trained["export"], points, [6, 6, 6, 6, 6])
    points[1, 2, 0] = np.nan  # a real point: row 1 is not decoded
    points[2, 5, 1] = np.inf  # padding (length 5): ignored
    out = _serve(trained["export"], points, [6, 6, 5, 0, 7])  # 0: empty; 7 > N
    np.testing.assert_array_equal(out["valid"], [True, False, True, False, False])
    np.testing.assert_array_equal(out["indices"][0], clean["indices"][0])  # others unaffected
    for row in (1, 3, 4):
        assert np.all(out["indices"][row] == -1) and out["log_prob"][row] == 0
        assert np.all(out["pointer"][row] == 0)
    assert sorted(out["indices"][2][out["indices"][2] >= 0]) == [0, 1, 2, 3, 4]
    # Longer than the model supports (12): a row past it is refused, the rest cut to 12.
    long = rng.random((2, 15, 2)).astype("float32")
    cut = _serve(trained["export"], long, [15, 10])
    np.testing.assert_array_equal(cut["valid"], [False, True])
    assert cut["indices"].shape == (2, 12)
    # Duplicate points: still a tour through every point once.
    same = np.repeat(rng.random((1, 1, 2)).astype("float32"), 5, axis=1)
    assert sorted(_serve(trained["export"], same, signature="all_points")["indices"][0]) == \
        [0, 1, 2, 3, 4]
    empty = _serve(trained["export"], np.zeros((2, 0, 2)), [0, 0])
    assert empty["indices"].shape == (2, 0) and not empty["valid"].any()
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[batch, N, 2\]"):
        _serve(trained["export"], np.zeros((1, 5, 3)), [5])
    with pytest.raises(tf.errors.InvalidArgumentError, match="one length per point set"):
        _serve(trained["export"], np.zeros((2, 5, 2)), [5])


def test_predict_prints_the_tour_and_plots(trained, tmp_path, capsys):
    from keras_attn.training import cli

    plot = str(tmp_path / "tour.png")
    cli.main(["predict", os.path.dirname(trained["export"]), "--n", "8", "--plot", plot])
    printed = capsys.readouterr().out
    assert "pointer-tsp: 8 points → indices 0 " in printed and "tour length" in printed
    assert os.path.getsize(plot) > 1000
    path = tmp_path / "square.txt"
    path.write_text("0 0\n1 0\n1 1\n0 1\n")
    cli.main(["predict", trained["export"], "--points-file", str(path)])
    assert "4 points → indices 0" in capsys.readouterr().out


@pytest.mark.parametrize("flags, message", [
    (["--points", "0 0; nan 1; 1 1"], "NaN or infinite"),
    (["--points", "0 0 1"], "2 coordinate"),
    (["--points", ""], "is empty"),
    (["--n", "13"], r"--n must be 1 … 12"),
    (["--points", "0 0; 1 1", "--n", "3"], "give one of --points, --points-file, --n"),
])
def test_predict_refuses_bad_input_clearly(trained, flags, message):
    from keras_attn.training import cli

    with pytest.raises(UsageError, match=message):
        cli.main(["predict", trained["export"], *flags])


def test_predict_refuses_a_point_set_longer_than_supported(trained, tmp_path):
    from keras_attn.training import cli

    path = tmp_path / "many.npy"
    np.save(path, np.random.default_rng(0).random((13, 2)))
    with pytest.raises(UsageError, match="supports at most 12"):
        cli.main(["predict", trained["export"], "--points-file", str(path)])
