"""bAbI-style question answering: the memory network (`model`), the preprocessors
(`preprocessor`: stories, questions and answers ↔ ids, the memory network's and the
DNC's), what both question-answering models share (`story_qa`) and their served
SavedModel (`export`), side by side. The DNC model itself is `models.dnc.DNCQA`."""

from keras_attn.models.memn2n.model import (
    CandidateLogits,
    MemN2NQA,
    MemN2NSchedule,
    compile_memn2n,
    with_attention,
)
from keras_attn.models.memn2n.preprocessor import (
    DNCQAPreprocessor,
    MemN2NPreprocessor,
    StoryPreprocessor,
)
from keras_attn.models.memn2n.story_qa import StoryQAModel

__all__ = ["CandidateLogits", "DNCQAPreprocessor", "MemN2NPreprocessor", "MemN2NQA",
           "MemN2NSchedule", "StoryPreprocessor", "StoryQAModel", "compile_memn2n",
           "with_attention"]
