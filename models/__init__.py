"""Full models composed from `keras_attn` layers, one module (or folder) per family.

Each family's model is a `keras.Model` subclass whose constructor arguments are
its config (`configured.ConfiguredModel`), with its inference path beside it; the
text families' folders hold their preprocessors too. Imports point one way:
`training` → `models` → `keras_attn`.
"""

from keras_attn.models.dnc import DNCQA, DNCSequenceModel
from keras_attn.models.memn2n import DNCQAPreprocessor, MemN2NPreprocessor, MemN2NQA
from keras_attn.models.ntm import NTMSequenceModel
from keras_attn.models.pointer_net import PointerNet
from keras_attn.models.translator import (
    TransformerTranslator,
    Translator,
    TranslatorPreprocessor,
)

__all__ = ["DNCQA", "DNCQAPreprocessor", "DNCSequenceModel", "MemN2NPreprocessor", "MemN2NQA",
           "NTMSequenceModel", "PointerNet", "TransformerTranslator", "Translator",
           "TranslatorPreprocessor"]
