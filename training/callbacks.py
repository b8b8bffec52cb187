"""Callbacks every task can add to its `fit`: a wall-clock budget, a
`BackupAndRestore` that reports where a resumed run starts, and Ctrl-C between batches."""

import signal
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
    """`BackupAndRestore` that says where a resumed run starts, and counts the
    epochs that ran in this process."""

    def __init__(self, backup_dir):
        super().__init__(backup_dir)
        self.initial_epoch = self.epochs_run = 0

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        # What the backup restored: `fit` starts from the model's `_initial_epoch`.
        self.initial_epoch = getattr(self.model, "_initial_epoch", None) or 0
        self.epochs_run = 0
        if self.initial_epoch:
            print(f"resuming from epoch {self.initial_epoch + 1} (the backup in "
                  f"{self.backup_dir})", flush=True)

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
