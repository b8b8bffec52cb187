"""Runs `keras-attn train …` in this process and saves the trained weights.

    python -m tests.training.distributed_worker WEIGHTS.npz train TASK [flags]

Used by test_distribution.py in subprocesses, whose environment sets the devices
(`XLA_FLAGS` on JAX, `LOGICAL_CPUS` on TensorFlow) and the processes
(`KERAS_DISTRIBUTION_*`).
"""

import sys

import numpy as np


def main(weights_path, argv):
    import os

    cpus = int(os.environ.get("LOGICAL_CPUS", "0"))
    if cpus and os.environ.get("KERAS_BACKEND") == "tensorflow":
        import tensorflow as tf

        physical = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            physical, [tf.config.LogicalDeviceConfiguration()] * cpus)
    from keras_attn.training import cli, runner, tasks

    trained = {}
    original = runner.fit_in_process

    def keeping_the_model(*args, **kwargs):
        out = original(*args, **kwargs)
        trained["model"], trained["record"] = out[1], out[2]
        return out

    runner.fit_in_process = keeping_the_model
    args = cli.task_options(argv)
    runner.train(tasks.get(args.task), args)
    weights = [np.asarray(w) for w in trained["model"].get_weights()]
    np.savez(weights_path, *weights)
    print("distribution:", trained["record"].get("distribution"), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
