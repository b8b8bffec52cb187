"""Full models composed from `keras_attn` layers, one module per model.

Each module builds a trainable `keras.Model` from a small config dataclass and
knows its inference path. Imports point one way: `training` → `models` →
`keras_attn`.
"""
