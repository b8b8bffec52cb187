"""Full models composed from `keras_attn` layers, one module per model.

Each module's model is a `keras.Model` subclass whose constructor arguments are
its config (`configured.ConfiguredModel`), with its inference path beside it.
Imports point one way: `training` → `models` → `keras_attn`.
"""
