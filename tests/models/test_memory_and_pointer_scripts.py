"""The bit-sequence models (NTM, DNC) and the pointer network from a script: `compile()`
with no arguments, `fit` on arrays, `generate` → what a user reads, `.keras` round
trip, `export(path)` → a SavedModel that TensorFlow alone serves."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_attn.models import DNCSequenceModel, NTMSequenceModel, PointerNet
from keras_attn.models.pointer_net import teacher_forcing


def copy_batches(rng, count, length=4, bits=4):
    """The copy task: `bits` random bits a step and a delimiter channel in, the same
    bits out after the delimiter; the target's last channel marks the output steps."""
    steps = 2 * length + 1
    x = np.zeros((count, steps, bits + 1), "float32")
    y = np.zeros((count, steps, bits + 1), "float32")
    data = rng.integers(0, 2, (count, length, bits)).astype("float32")
    x[:, :length, :bits] = data
    x[:, length, bits] = 1.0
    y[:, length + 1:, :bits] = data
    y[:, length + 1:, bits] = 1.0
    return x, y


def tensorflow_only(script):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("cls", [NTMSequenceModel, DNCSequenceModel])
def test_a_bit_sequence_model_from_a_script(cls, rng, tmp_path):
    x, y = copy_batches(rng, 64)
    model = cls(input_bits=5, output_bits=4, memory_size=8, memory_width=6,
                controller_units=16)
    model.compile()
    assert float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)) == pytest.approx(3e-4)
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all() and "bit_errors" in history.history
    bits = model.generate(x[0])
    assert bits.shape == (1, 9, 4) and bits.dtype == np.int8 and set(np.unique(bits)) <= {0, 1}
    logits = model.predict(x[:3], verbose=0)
    np.testing.assert_array_equal(model.generate(x[:3]), (logits > 0).astype("int8"))
    with pytest.raises(ValueError, match=r"must be \(steps, 5\) or \(batch, steps, 5\)"):
        model.generate(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="`threshold` must be a number in \\(0, 1\\)"):
        model.generate(x[0], threshold=1.5)
    path = str(tmp_path / "model.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)  # safe mode
    np.testing.assert_array_equal(reloaded.generate(x[:4]), model.generate(x[:4]))
    if keras.backend.backend() != "tensorflow":
        return
    export = str(tmp_path / "export")
    model.export(export)
    sequences = x[:3].copy()
    sequences[1, 0, 0] = np.nan
    np.save(tmp_path / "x.npy", sequences)
    out = tensorflow_only(f"""
        import json, sys
        import numpy as np
        import tensorflow as tf
        serve = tf.saved_model.load({export!r}).signatures["serving_default"]
        out = serve(sequence=tf.constant(np.load({str(tmp_path / 'x.npy')!r})))
        empty = serve(sequence=tf.zeros([2, 0, 5]))
        assert "keras_attn" not in sys.modules
        print(json.dumps({{"output": out["output"].numpy().tolist(),
                          "valid": out["valid"].numpy().tolist(),
                          "reads": list(out["read_weightings"].shape),
                          "empty": list(empty["output"].shape)}}))
    """)
    assert out["valid"] == [True, False, True]
    served = np.array(out["output"])
    expected = 1 / (1 + np.exp(-model.predict(x[:3], verbose=0)))
    np.testing.assert_allclose(served[[0, 2]], expected[[0, 2]], atol=1e-5)
    assert (served[1] == 0).all()
    assert out["reads"] == [3, 9, 1, 8] and out["empty"] == [2, 0, 4]


def test_a_pointer_network_from_a_script(rng, tmp_path):
    n = 5
    points = rng.random((512, n, 1)).astype("float32")
    tokens, targets, weights = teacher_forcing(np.argsort(points[..., 0], axis=1))
    model = PointerNet(point_dim=1, units=32, encoder_layers=1, heads=2)
    model.compile()
    x = {"points": points, "lengths": np.full(512, n, "int32"), "decoder_tokens": tokens}
    history = model.fit(x, targets, sample_weight=weights, batch_size=64, epochs=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    test = rng.random((6, n, 1)).astype("float32")
    orders = model.generate(test, beam_width=2)
    assert all(sorted(order) == list(range(n)) for order in orders)  # permutations
    assert model.generate(test[0]) == model.generate(test[:1])
    short = model.generate(test[:2], lengths=np.array([3, 5], "int32"))
    assert sorted(short[0]) == [0, 1, 2] and sorted(short[1]) == list(range(n))
    path = str(tmp_path / "pointer.keras")
    model.save(path)
    assert keras.saving.load_model(path).generate(test, beam_width=2) == orders
    if keras.backend.backend() != "tensorflow":
        return
    export = str(tmp_path / "export")
    model.export(export, beam_width=2)
    np.save(tmp_path / "p.npy", test)
    out = tensorflow_only(f"""
        import json, sys
        import numpy as np
        import tensorflow as tf
        loaded = tf.saved_model.load({export!r})
        points = tf.constant(np.load({str(tmp_path / 'p.npy')!r}))
        every = loaded.signatures["all_points"](points=points)
        some = loaded.signatures["serving_default"](
            points=points[:2], lengths=tf.constant([3, 0], tf.int32))
        assert "keras_attn" not in sys.modules
        print(json.dumps({{"indices": every["indices"].numpy().tolist(),
                          "some": some["indices"].numpy().tolist(),
                          "valid": some["valid"].numpy().tolist()}}))
    """)
    assert [[i for i in row if i >= 0] for row in out["indices"]] == orders
    assert out["valid"] == [True, False] and out["some"][1] == [-1] * n
    assert sorted(i for i in out["some"][0] if i >= 0) == [0, 1, 2]


@pytest.mark.parametrize("cls, task", [(NTMSequenceModel, "ntm-copy"),
                                       (DNCSequenceModel, "dnc-copy")])
def test_a_bit_model_exported_for_its_task_is_read_by_predict(cls, task, tmp_path):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("export runs on the TensorFlow backend")
    model = cls(input_bits=9, output_bits=8, memory_size=8, memory_width=6,
                controller_units=16)  # the copy task's layout, untrained
    export = str(tmp_path / "export")
    model.export(export, task=task)
    meta = json.load(open(os.path.join(export, "assets.extra", "meta.json")))
    assert meta["task"] == task and meta["settings"]["input_bits"] == 9
    predicted = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "keras-attn"), "predict", export,
         "--length", "4"], capture_output=True, text=True, timeout=300)
    assert predicted.returncode == 0, predicted.stderr[-2000:]
    assert "bit errors:" in predicted.stdout


def test_a_pointer_network_exported_for_its_task_is_read_by_predict(tmp_path):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("export runs on the TensorFlow backend")
    model = PointerNet(point_dim=1, units=16, encoder_layers=1, heads=2)
    export = str(tmp_path / "export")
    model.export(export, task="pointer-sort", max_points=12)
    assert json.load(open(os.path.join(export, "assets.extra", "meta.json")))[
        "settings"]["max_points"] == 12
    predicted = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "keras-attn"), "predict", export,
         "--points", "0.5; 0.1; 0.9"], capture_output=True, text=True, timeout=300)
    assert predicted.returncode == 0, predicted.stderr[-2000:]
