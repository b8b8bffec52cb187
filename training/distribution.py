"""`--distribute data-parallel`: one model replicated on every device, each batch split
between them, on Keras's own engines only.

* JAX: `keras.distribution.DataParallel` over every local device; with
  `KERAS_DISTRIBUTION_JOB_ADDRESSES`, `KERAS_DISTRIBUTION_NUM_PROCESSES` and
  `KERAS_DISTRIBUTION_PROCESS_ID` set, first `keras.distribution.initialize()`,
  which joins the processes (`jax.distributed.initialize`), and the devices are
  those of every process.
* TensorFlow: `tf.distribute.MirroredStrategy` over the local GPUs, or the
  logical CPUs when there is no GPU. Several TensorFlow workers (`TF_CONFIG`) are
  refused: `MultiWorkerMirroredStrategy` with Keras 3's `fit` is broken upstream
  (keras-team/keras#20585).
* PyTorch: refused; `DataParallel` with `fit` came after Keras 3.15
  (keras-team/keras#23316).

`--batch-size` is the global batch, split evenly between the devices. Only
process 0 writes the run folder, the logs and the export.
"""

import contextlib
import dataclasses
import os

import keras
import numpy as np

from keras_attn.training.data.even_batches import EvenBatches
from keras_attn.training.errors import UsageError

STRATEGIES = ("none", "data-parallel")
MULTI_PROCESS_VARIABLES = (
    "KERAS_DISTRIBUTION_JOB_ADDRESSES",
    "KERAS_DISTRIBUTION_NUM_PROCESSES",
    "KERAS_DISTRIBUTION_PROCESS_ID",
)


@dataclasses.dataclass
class Placement:
    """Where a run trains: its devices, its processes and this process's place."""

    strategy: str = "none"
    devices: int = 1
    processes: int = 1
    process_id: int = 0
    global_batch: int = 0
    tf_strategy: object = None

    @property
    def is_chief(self):
        """Process 0: the one that writes the run folder and the export."""
        return self.process_id == 0

    def scope(self):
        """Where the model must be built and compiled (TensorFlow's strategy scope)."""
        if self.tf_strategy is None:
            return contextlib.nullcontext()
        return self.tf_strategy.scope()

    def record(self):
        """The run's metadata entry."""
        return {"strategy": self.strategy, "devices": self.devices, "processes": self.processes,
                "global_batch": self.global_batch,
                "per_device_batch": self.global_batch // self.devices}


_current = Placement()


def current():
    """The placement of this process's run (one device until `place` says otherwise)."""
    return _current


def even_fit_arguments(arguments):
    """`model.fit`'s arguments with every batch splitting evenly between the devices.

    Without `--distribute` they are returned as they are; with it (one device or
    several, the same batches) the training data and the validation data become
    `EvenBatches` (short batches padded at weight 0).
    """
    devices = _current.devices
    if _current.strategy == "none":
        return arguments
    arguments = dict(arguments)
    batch_size = arguments.pop("batch_size", None) or 32
    processes = {"processes": _current.processes, "process_id": _current.process_id}
    arguments["x"] = EvenBatches(arguments["x"], arguments.pop("y", None),
                                 arguments.pop("sample_weight", None), batch_size, devices,
                                 shuffle=arguments.pop("shuffle", True), **processes)
    validation = arguments.get("validation_data")
    if validation is not None:
        parts = (validation,) if isinstance(validation, keras.utils.PyDataset) else validation
        arguments["validation_data"] = EvenBatches(*parts, batch_size=batch_size,
                                                   multiple=devices, **processes)
    return arguments


def gather(model):
    """After a data-parallel `fit`: one device again, each process holding the
    whole model, so evaluation, saving and export run on any batch."""
    global _current
    if _current.strategy == "none" or keras.backend.backend() != "jax":
        return
    import jax

    keras.distribution.set_distribution(None)
    variables = list(model.variables)
    if getattr(model, "optimizer", None) is not None:
        variables += list(model.optimizer.variables)
    for variable in variables:
        value = variable.value
        if isinstance(value, jax.Array) and not value.is_fully_addressable:
            value = value.addressable_data(0)
        variable.assign(np.asarray(jax.device_get(value)))


def multi_process_requested(environ=None):
    environ = os.environ if environ is None else environ
    return all(environ.get(name) for name in MULTI_PROCESS_VARIABLES)


def place(strategy, batch_size, task_name, uses_fit=True):
    """Sets up `strategy` for this process; `UsageError` with one line where it cannot be.

    Must run before the model is built (and, for several processes, before any
    computation).
    """
    if strategy not in STRATEGIES:
        raise UsageError(f"`--distribute` must be one of {STRATEGIES}; received {strategy!r}")
    global _current
    if strategy == "none":
        _current = Placement(global_batch=batch_size)
        return _current
    if not uses_fit:
        raise UsageError(
            f"--distribute {strategy}: the {task_name} task trains with its own loop of "
            "train_on_batch, which Keras's distribution does not split; train it on one device")
    backend = keras.backend.backend()
    if backend == "jax":
        placement = _place_jax()
    elif backend == "tensorflow":
        placement = _place_tensorflow()
    else:
        raise UsageError(
            f"--distribute {strategy} is not available on the {backend} backend with Keras "
            f"{keras.version()} (DataParallel with fit on PyTorch came after Keras 3.15, "
            "keras-team/keras#23316); use --backend jax or tensorflow")
    if batch_size % placement.devices:
        raise UsageError(
            f"`--batch-size` is the global batch and must split evenly between "
            f"{placement.devices} devices; received {batch_size}")
    placement.strategy, placement.global_batch = strategy, batch_size
    _current = placement
    return placement


def _place_jax():
    if multi_process_requested():
        keras.distribution.initialize()
    import jax

    devices = keras.distribution.list_devices()
    # Each process reads its own part of every batch (`EvenBatches`), so Keras
    # need not shard the data itself.
    keras.distribution.set_distribution(keras.distribution.DataParallel(
        devices=devices, auto_shard_dataset=jax.process_count() == 1))
    return Placement(devices=len(devices), processes=jax.process_count(),
                     process_id=jax.process_index())


def _place_tensorflow():
    if os.environ.get("TF_CONFIG"):
        raise UsageError(
            "--distribute data-parallel: several TensorFlow workers (TF_CONFIG) are not "
            "supported, as MultiWorkerMirroredStrategy with Keras 3's fit is broken "
            "(keras-team/keras#20585); run several processes on the JAX backend "
            "(docs/guides/distributed.md)")
    import tensorflow as tf

    devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
    strategy = tf.distribute.MirroredStrategy([d.name for d in devices])
    return Placement(devices=strategy.num_replicas_in_sync, tf_strategy=strategy)


def reset():
    """Back to one device (tests, and a second run in one process)."""
    global _current
    _current = Placement()
    if keras.backend.backend() == "jax":
        keras.distribution.set_distribution(None)
