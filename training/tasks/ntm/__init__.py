"""Neural Turing machines and differentiable neural computers on bit-sequence tasks."""

from keras_attn.training.tasks.ntm.task import SPECS, BitSequenceTask

TASKS = tuple(BitSequenceTask(spec) for spec in SPECS.values())
