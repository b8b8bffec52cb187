"""Datasets, the task registry, the `keras-attn` CLI, and export/serving glue.

Only the export and serving code in this package imports TensorFlow.
"""
