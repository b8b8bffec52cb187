"""`--distribute data-parallel`: the same weights on one device, two devices and two
processes (JAX, virtual CPU devices), process 0 alone writing; clear refusals."""

import importlib.util
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from keras_attn.training import distribution
from keras_attn.training.errors import UsageError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 240
TOLERANCE = 1e-5  # float32 sums split in two and added back: rounding only
TASK_FLAGS = {
    "translator": ["--train-size", "100", "--test-size", "20", "--epochs", "1"],
    "memn2n": ["--kinds", "1", "--train-questions", "70", "--test-questions", "32",
               "--epochs", "2"],
}
needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs JAX")


def _start(weights, flags, env):
    command = [sys.executable, "-m", "tests.training.distributed_worker", str(weights),
               "train", *flags, "--batch-size", "16", "--seed", "3", "--quiet",
               "--no-tensorboard", "--distribute", "data-parallel"]
    return subprocess.Popen(command, cwd=ROOT, env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(processes):
    """Waits for every process (killing all of them on a timeout); returns outputs."""
    outputs = []
    try:
        for process in processes:
            outputs.append(process.communicate(timeout=TIMEOUT)[0])
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
    for process, output in zip(processes, outputs, strict=True):
        assert process.returncode == 0, output[-3000:]
    return outputs


def _weights(path):
    with np.load(path) as archive:
        return [archive[name] for name in archive.files]


def _max_difference(a, b):
    assert len(a) == len(b)
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b, strict=True))


@needs_jax
@pytest.mark.parametrize("task", ["translator", "memn2n"])
def test_two_devices_train_the_weights_of_one(task, tmp_path):
    runs = []
    for devices in (1, 2):
        env = {"KERAS_BACKEND": "jax",
               "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
        flags = [task, *TASK_FLAGS[task], "--work-dir", str(tmp_path / f"run{devices}"),
                 "--no-export"]
        runs.append(_start(tmp_path / f"w{devices}.npz", flags, env))
    one, two = _finish(runs)
    assert "'devices': 1" in one and "'devices': 2, 'processes': 1" in two
    assert "'per_device_batch': 8" in two
    assert _max_difference(_weights(tmp_path / "w1.npz"), _weights(tmp_path / "w2.npz")) \
        < TOLERANCE


@needs_jax
def test_two_processes_end_equal_and_only_process_0_writes(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run_dir, export = tmp_path / "run", tmp_path / "export"
    processes = []
    for process_id in (0, 1):
        env = {"KERAS_BACKEND": "jax", "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
               "KERAS_DISTRIBUTION_JOB_ADDRESSES": f"127.0.0.1:{port}",
               "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
               "KERAS_DISTRIBUTION_PROCESS_ID": str(process_id)}
        flags = ["memn2n", *TASK_FLAGS["memn2n"], "--work-dir", str(run_dir),
                 "--output-dir", str(export)]
        processes.append(_start(tmp_path / f"w{process_id}.npz", flags, env))
    chief, other = _finish(processes)
    assert "'devices': 2, 'processes': 2" in chief and "'processes': 2" in other
    assert _max_difference(_weights(tmp_path / "w0.npz"), _weights(tmp_path / "w1.npz")) == 0
    assert "run folder" in chief and "run folder" not in other
    assert (run_dir / "model.keras").exists() and (run_dir / "meta.json").exists()
    assert sorted(os.listdir(export / "memn2n")) == ["1"]  # one export, by process 0
    meta = (run_dir / "meta.json").read_text()
    assert '"per_device_batch": 8' in meta and '"processes": 2' in meta


def test_tensorflow_mirrors_over_two_logical_cpus(tmp_path):
    pytest.importorskip("tensorflow")
    env = {"KERAS_BACKEND": "tensorflow", "LOGICAL_CPUS": "2"}
    flags = ["memn2n", *TASK_FLAGS["memn2n"], "--work-dir", str(tmp_path / "run"),
             "--no-export"]
    (output,) = _finish([_start(tmp_path / "w.npz", flags, env)])
    assert "'devices': 2" in output and "without XLA" in output
    assert all(np.all(np.isfinite(w)) for w in _weights(tmp_path / "w.npz"))


@pytest.mark.parametrize("kwargs, message", [
    ({"strategy": "data-parallel", "batch_size": 8, "task_name": "ntm", "uses_fit": False},
     "the ntm task trains with its own loop of train_on_batch"),
    ({"strategy": "model-parallel", "batch_size": 8, "task_name": "memn2n"},
     "`--distribute` must be one of"),
])
def test_refusals_are_one_line(kwargs, message):
    with pytest.raises(UsageError, match=message) as error:
        distribution.place(**kwargs)
    assert "\n" not in str(error.value)


def test_torch_and_tensorflow_workers_are_refused(monkeypatch):
    monkeypatch.setattr(distribution.keras.backend, "backend", lambda: "torch")
    with pytest.raises(UsageError, match="not available on the torch backend.*23316"):
        distribution.place("data-parallel", 8, "memn2n")
    monkeypatch.setattr(distribution.keras.backend, "backend", lambda: "tensorflow")
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {}}')
    with pytest.raises(UsageError, match="several TensorFlow workers.*20585.*JAX"):
        distribution.place("data-parallel", 8, "memn2n")
    distribution.reset()


def test_even_batches_pad_at_weight_zero_and_split_between_processes():
    from keras_attn.training.data.even_batches import EvenBatches

    x = {"a": np.arange(10)}
    y = np.arange(10) * 10
    batches = EvenBatches(x, y, batch_size=4, multiple=4)
    assert len(batches) == 3
    last_x, last_y, last_w = batches[2]
    np.testing.assert_array_equal(last_x["a"], [8, 9, 8, 8])
    np.testing.assert_array_equal(last_w, [1, 1, 0, 0])
    seen = np.concatenate([batches[i][0]["a"][batches[i][2] > 0] for i in range(3)])
    np.testing.assert_array_equal(np.sort(seen), np.arange(10))  # none lost, none twice
    halves = [EvenBatches(x, y, batch_size=4, multiple=4, processes=2, process_id=p)[2]
              for p in (0, 1)]
    np.testing.assert_array_equal(np.concatenate([h[0]["a"] for h in halves]), last_x["a"])
    np.testing.assert_array_equal(np.concatenate([h[2] for h in halves]), last_w)
