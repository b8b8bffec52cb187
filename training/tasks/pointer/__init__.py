"""Pointer networks on sorting, planar convex hulls and small TSPs."""

from keras_attn.training.tasks.pointer.task import SPECS, PointerTask

TASKS = tuple(PointerTask(spec) for spec in SPECS.values())
