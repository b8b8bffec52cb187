"""The explore page of the NTM and DNC bit-sequence exports: a generated sequence in,
the input, target and output bits and the read and write weightings over memory ×
time out (Graves et al. 2014, Fig. 6)."""

import numpy as np
import tensorflow as tf

from keras_attn.training import charts
from keras_attn.training.errors import UsageError
from keras_attn.training.export import loaded_signature
from keras_attn.training.tasks.ntm.inputs import example


def _bits(matrix, title):
    matrix = np.asarray(matrix).T  # channels down, time across
    return charts.heatmap(matrix, range(1, matrix.shape[1] + 1), range(1, matrix.shape[0] + 1),
                          title, "time step", "channel", zmax=1.0)


def _weightings(weightings, title):
    matrix = np.asarray(weightings).T  # memory rows down, time across
    return charts.heatmap(matrix, range(1, matrix.shape[1] + 1), range(matrix.shape[0]),
                          title, "time step", "memory row", zmax=None)


def explore(spec, version_dir, meta, inputs):
    params = {}
    for name in spec.example:
        value = inputs.get(name)
        try:
            params[name] = int(value) if value not in (None, "") else None
        except (TypeError, ValueError):
            raise UsageError(f"--{name} must be a whole number; received {value!r}") from None
        if params[name] is not None and not 1 <= params[name] <= 100:
            raise UsageError(f"--{name} must be 1 … 100; received {params[name]}")
    try:
        seed = int(inputs.get("seed") or 0)
    except (TypeError, ValueError):
        raise UsageError(f"--seed must be a whole number; received {inputs.get('seed')!r}") \
            from None
    (sequence, target), drawn = example(spec, seed, **params)
    out = loaded_signature(version_dir)(sequence=tf.constant(sequence))
    output = out["output"].numpy()[0]
    counted = target[0, :, -1] > 0
    errors = int(np.sum(target[0, counted, :-1] != (output[counted] > 0.5)))
    label = ", ".join(f"{k} {v}" for k, v in drawn.items()) or "the task's layout"
    answer = (f"{spec.name} ({label}): {sequence.shape[1]} steps, {errors} bit errors of "
              f"{int(counted.sum()) * (target.shape[-1] - 1)} output bits")
    return {"answer": answer, "figures": [
        _bits(sequence[0], "input"),
        _bits(target[0, :, :-1], "target"),
        _bits(output, "output (probabilities)"),
        _weightings(out["write_weightings"].numpy()[0][:, 0], "write weighting (head 1)"),
        _weightings(out["read_weightings"].numpy()[0][:, 0], "read weighting (head 1)"),
    ]}
