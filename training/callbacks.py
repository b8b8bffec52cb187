"""Callbacks every task can add to its `fit`: a wall-clock budget, and a
`BackupAndRestore` that reports where a resumed run starts."""

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
