"""A sequence model around `keras_attn.memory.DNCCell` for bit-vector tasks.

The same contract as `models/ntm.py` (whose cost, metric, compile step and
`with_weightings` it shares): `sequence (B, T, input_bits)` → logits
`(B, T, output_bits)`, trained on the cost in bits per sequence.
"""

import dataclasses

from keras_attn.memory import DNCCell
from keras_attn.models.config import check_integer_fields
from keras_attn.models.ntm import bit_sequence_model


@dataclasses.dataclass
class DNCConfig:
    input_bits: int = 9
    output_bits: int = 8
    memory_size: int = 64
    memory_width: int = 20
    read_heads: int = 1
    controller_units: int = 100
    clip_value: float = 20.0

    def __post_init__(self):
        check_integer_fields(self)


def build_dnc(config):
    """The training model `{"sequence"} → logits`; `models.ntm.with_weightings`
    adds the read and write weightings."""
    cell = DNCCell(
        units=config.output_bits,
        memory_size=config.memory_size,
        memory_width=config.memory_width,
        read_heads=config.read_heads,
        controller_units=config.controller_units,
        clip_value=config.clip_value,
        return_weightings=True,
        name="dnc_cell",
    )
    return bit_sequence_model(cell, config.input_bits, config.output_bits, "dnc")
