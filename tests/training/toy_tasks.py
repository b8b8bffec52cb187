"""What the runner's toy tasks share: a `Task` with no figures and no export, and
registering one for a test's length."""

import contextlib

from keras_attn.training import tasks
from keras_attn.training.task import Task


class TrainOnlyTask(Task):
    """A task that trains and saves its run, with nothing to score or export."""

    def settings(self, args, data, model):
        return {}

    def evaluate(self, model, meta, assets, args=None, data=None):
        return {}

    def export_archive(self, model, meta, assets):
        raise NotImplementedError(f"{self.name} is a test task: it has no export")

    def predict(self, version_dir, meta, args):
        raise NotImplementedError(f"{self.name} is a test task: it has no export")


@contextlib.contextmanager
def registered(task):
    """`task` in the registry (and so on the command line) until the block ends."""
    tasks.register(task)
    try:
        yield task
    finally:
        tasks.unregister(task.name)
