"""Callbacks every task can add to its `fit`: a wall-clock budget, a
`BackupAndRestore` that reports where a resumed run starts and survives a damaged
backup, and Ctrl-C between batches."""

import json
import os
import signal
import sys
import threading
import time

import keras


class TimeBudget(keras.callbacks.Callback):
    """Stops `fit` at the end of the first batch past `seconds`."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.stopped_early = False

    def on_train_begin(self, logs=None):
        self.deadline = time.monotonic() + self.seconds

    def on_train_batch_end(self, batch, logs=None):
        if time.monotonic() > self.deadline:
            self.model.stop_training = True
            if not self.stopped_early:
                print(f"\ntime budget of {self.seconds / 60:g} minutes spent: stopping")
            self.stopped_early = True


class ResumeReport(keras.callbacks.BackupAndRestore):
    """`BackupAndRestore` that writes its backup atomically, says where a resumed run
    starts, sets aside a backup it cannot read, and counts the epochs that ran in
    this process.

    Keras writes `latest.weights.h5` in place, so a kill or a full disk during the
    write leaves a file that no rerun can open. Here each file is written beside
    its final name and renamed over it: a kill at any moment leaves the previous
    good backup. A backup that still cannot be read (damaged some other way) is
    renamed to `<backup>.damaged-<time>` with one line saying so, and the run
    starts over.
    """

    WEIGHTS, METADATA = "latest.weights.h5", "training_metadata.json"

    def __init__(self, backup_dir):
        super().__init__(backup_dir)
        self.initial_epoch = self.epochs_run = 0

    def on_train_begin(self, logs=None):
        try:
            super().on_train_begin(logs)
        except Exception as error:  # noqa: BLE001 (h5py, JSON and Keras each raise their own)
            self._set_aside(error)
        # What the backup restored: `fit` starts from the model's `_initial_epoch`.
        self.initial_epoch = getattr(self.model, "_initial_epoch", None) or 0
        self.epochs_run = 0
        if self.initial_epoch:
            print(f"resuming from epoch {self.initial_epoch + 1} (the backup in "
                  f"{self.backup_dir})", flush=True)

    def _set_aside(self, error):
        stem = f"{self.backup_dir.rstrip(os.sep)}.damaged-{time.strftime('%Y%m%d-%H%M%S')}"
        damaged, count = stem, 1
        while os.path.exists(damaged):
            count += 1
            damaged = f"{stem}-{count}"
        os.replace(self.backup_dir, damaged)
        self.model._initial_epoch = None
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"the backup in {self.backup_dir} cannot be read ({reason}); moved it to "
              f"{damaged} and starting over", file=sys.stderr, flush=True)

    # Overrides Keras's private writer (the only one `BackupAndRestore` has);
    # tests/training/test_callbacks.py fails if Keras renames it.
    def _save_model(self):
        os.makedirs(self.backup_dir, exist_ok=True)
        weights = os.path.join(self.backup_dir, self.WEIGHTS)
        partial = os.path.join(self.backup_dir, ".partial." + self.WEIGHTS)
        self.model.save_weights(partial, overwrite=True)
        metadata = os.path.join(self.backup_dir, self.METADATA)
        with open(metadata + ".partial", "w") as f:
            json.dump({"epoch": self._current_epoch, "batch": self._last_batch_seen}, f)
        # Weights first: a kill between the two renames leaves new weights with the
        # previous epoch's number, which reruns one epoch rather than skipping one.
        os.replace(partial, weights)
        os.replace(metadata + ".partial", metadata)

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        self.epochs_run += 1


class CtrlC(keras.callbacks.Callback):
    """Turns Ctrl-C during `fit` into a `KeyboardInterrupt` at the next batch's end.

    Python raises `KeyboardInterrupt` wherever the signal lands, and where that is a
    finaliser or a framework's cleanup, it is printed and ignored, and training goes
    on. Here the signal only sets a flag, and the interrupt is raised from this
    callback, between batches, where nothing swallows it; `fit` then stops before
    the epoch's end, so the last backup stays that of the last whole epoch. A second
    Ctrl-C interrupts at once.
    """

    def __init__(self):
        super().__init__()
        self.pressed = False
        self._previous = None

    def _press(self, signum, frame):
        if self.pressed:
            raise KeyboardInterrupt
        self.pressed = True

    def on_train_begin(self, logs=None):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._press)

    def _check(self, *args, **kwargs):
        if self.pressed:
            self._restore()
            raise KeyboardInterrupt

    on_train_batch_end = on_test_batch_end = on_epoch_end = _check

    def _restore(self):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def on_train_end(self, logs=None):
        self._restore()
