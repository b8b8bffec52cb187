"""`keras_attn.choices`: one spelling of every named choice, read by layers, models
and the command line alike."""

import ast
import inspect

import pytest

import keras_attn
from keras_attn import choices
from keras_attn.models import memn2n, pointer_net, translator


def test_the_module_imports_nothing():
    tree = ast.parse(inspect.getsource(choices))
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


@pytest.mark.parametrize("make, names, bad", [
    (lambda score: keras_attn.LuongAttention(score=score), choices.LUONG_SCORES, "cosine"),
    (lambda score: keras_attn.MonotonicAttention(score=score, units=4),
     choices.MONOTONIC_SCORES, "concat"),
    (lambda name: keras_attn.NTMCell(4, memory_size=4, memory_width=3, controller=name),
     choices.NTM_CONTROLLERS, "gru"),
    (lambda name: keras_attn.NTMCell(4, memory_size=4, memory_width=3, memory_init=name),
     choices.NTM_MEMORY_INITS, "zeros"),
    (lambda name: translator.Translator(9, 9, attention=name, encoder_units=64,
                                        decoder_units=128),
     choices.TRANSLATOR_ATTENTIONS, "luong-cosine"),
    (lambda name: translator.Translator(9, 9, rnn=name), choices.RNN_CELLS, "rnn"),
    (lambda name: keras_attn.MemN2N(9, weight_tying=name), choices.MEMN2N_WEIGHT_TYINGS,
     "global"),
    (lambda name: keras_attn.MemN2N(9, empty_slots=name), choices.MEMN2N_EMPTY_SLOTS, "drop"),
    (lambda name: memn2n.MemN2NQA(9, [1], memory_size=3, sentence_length=2, question_length=2,
                                  position_encoding_form=name),
     choices.MEMN2N_POSITION_ENCODING_FORMS, "matlab"),
    (lambda name: pointer_net.PointerNet(encoder=name, units=8, encoder_layers=1, heads=2),
     choices.POINTER_ENCODERS, "gru"),
])
def test_each_name_is_accepted_and_another_is_refused_with_the_list(make, names, bad):
    for name in names:
        make(name)
    with pytest.raises(ValueError) as error:
        make(bad)
    assert f"one of {names}; received {bad!r}" in str(error.value)
