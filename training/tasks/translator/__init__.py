"""The seq2seq translator (RNN with attention, or Transformer) on parallel text."""

from keras_attn.training.tasks.translator.task import TranslatorTask

TASKS = (TranslatorTask(),)
