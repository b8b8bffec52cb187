"""Datasets, the task registry, the `keras-attn` CLI, and export/serving glue.

Only the export and serving code in this package imports TensorFlow.
"""

import os

# TensorFlow's CPU allocator defaults to malloc, whose large blocks go back to the
# OS on free and fault in again on the next step. Its BFC allocator keeps them:
# 200 steps of `train pointer-hull` on 2 cores took 81 s instead of 101 s
# (system time 3 s instead of 32 s) with the same losses. It must be set before
# TensorFlow starts, hence here, the package every `keras-attn` command imports
# first; a value the user set wins.
os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")
