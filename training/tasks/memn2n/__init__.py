"""End-to-end memory networks on bAbI-format question answering."""

from keras_attn.training.tasks.memn2n.task import MemN2NTask

TASKS = (MemN2NTask(),)
