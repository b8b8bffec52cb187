"""bAbI-format question answering: the end-to-end memory network (`memn2n`) and
the differentiable neural computer read word by word (`dnc-babi`)."""

from keras_attn.training.tasks.memn2n.dnc_task import DNCBabiTask
from keras_attn.training.tasks.memn2n.task import MemN2NTask

TASKS = (MemN2NTask(), DNCBabiTask())
