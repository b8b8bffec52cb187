"""The layer benchmark's timing loop: each block is timed only once the step has settled."""

import os
import sys
import time

import pytest

pytest.importorskip("tensorflow")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import attention_layers  # noqa: E402


class _Loss:
    def numpy(self):
        return 0.0


class _SlowAfterSwitch:
    """A step that takes `slow_s` for its first `slow_calls` calls after another fn ran."""

    def __init__(self, machine, slow_calls=3, slow_s=0.02, fast_s=0.001):
        self.machine, self.slow_calls, self.slow_s, self.fast_s = machine, slow_calls, slow_s, fast_s
        self.calls = 0
        self.since_switch = 0

    def __call__(self):
        if self.machine["last"] is not self:
            self.machine["last"] = self
            self.since_switch = 0
        self.since_switch += 1
        self.calls += 1
        time.sleep(self.slow_s if self.since_switch <= self.slow_calls else self.fast_s)
        return _Loss(), None


def test_blocks_are_timed_after_the_step_settles():
    machine = {"last": None}
    fns = {name: _SlowAfterSwitch(machine) for name in "ab"}
    times = attention_layers.time_alternating(fns, steps=10, block=5, warmup=1, settle_s=0.08)
    # Only the fast, settled calls are timed (sleep overshoot allowed).
    assert all(0.001 <= t < 0.01 for t in times.values()), times
    for fn in fns.values():
        rounds = 2  # 10 steps in blocks of 5
        assert fn.calls >= 1 + rounds * (3 + 5)


def test_without_settling_the_slow_calls_after_a_switch_are_timed():
    # No settle time, only the two untimed calls: the slow calls 3 to 5 after
    # each switch are timed, and they are the median here.
    machine = {"last": None}
    fns = {name: _SlowAfterSwitch(machine, slow_calls=5) for name in "ab"}
    times = attention_layers.time_alternating(fns, steps=10, block=5, warmup=1, settle_s=0.0)
    assert all(t >= 0.02 for t in times.values()), times


def test_at_least_two_untimed_calls_precede_each_block():
    machine = {"last": None}
    fns = {name: _SlowAfterSwitch(machine, slow_calls=2) for name in "ab"}
    times = attention_layers.time_alternating(fns, steps=5, block=5, warmup=1, settle_s=0.0)
    assert all(t < 0.01 for t in times.values()), times
    assert all(fn.calls == 1 + 2 + 5 for fn in fns.values())


def test_threads_must_not_be_negative(capsys):
    with pytest.raises(SystemExit):
        attention_layers.main(["--threads", "-1"])
    assert "--threads must be 0 or more; received -1" in capsys.readouterr().err


def test_threads_option_sets_and_records_tensorflow_threads(tmp_path):
    # A fresh process: TensorFlow's thread counts can only be set before its first op.
    import json
    import subprocess

    output = tmp_path / "layers.json"
    script = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "attention_layers.py")
    tiny = ["--batch", "2", "--length", "4", "--dim", "8", "--heads", "2", "--units", "4",
            "--steps", "10", "--settle-ms", "0", "--memory-dims", "8"]
    subprocess.run(
        [sys.executable, script, *tiny, "--threads", "1", "--output", str(output)],
        check=True, capture_output=True, env={**os.environ, "KERAS_BACKEND": "tensorflow"},
    )
    result = json.loads(output.read_text())
    assert result["config"]["threads"] == 1
    assert result["tf_threads"] == {"intra_op": 1, "inter_op": 1}
    assert {row["case"] for row in result["rows"]} == {"a", "b", "c"}
