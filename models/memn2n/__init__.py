"""The memory network for bAbI-style question answering: the model (`model`), its
preprocessor (`preprocessor`: stories, questions and answers ↔ ids) and its served
SavedModel (`export`), side by side."""

from keras_attn.models.memn2n.model import (
    CandidateLogits,
    MemN2NQA,
    MemN2NSchedule,
    compile_memn2n,
    with_attention,
)
from keras_attn.models.memn2n.preprocessor import MemN2NPreprocessor

__all__ = ["CandidateLogits", "MemN2NPreprocessor", "MemN2NQA", "MemN2NSchedule",
           "compile_memn2n", "with_attention"]
