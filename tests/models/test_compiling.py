"""Every model's `compile_*` builds its optimizer: a saved run's weights file restores it."""

import warnings

import numpy as np
import pytest

from keras_attn.models import memn2n, ntm, pointer_net, translator
from tests.keras_attn.contract import to_numpy

BUILDERS = {
    "translator": lambda: translator.compile_translator(translator.Translator(
        20, 12, encoder_units=8, decoder_units=16, attention_units=8, attention_layer_size=16,
        embedding_dim=8)),
    "pointer": lambda: pointer_net.compile_pointer_net(pointer_net.PointerNet(
        units=16, encoder_layers=1, heads=2, glimpses=1)),
    "ntm": lambda: ntm.compile_ntm(ntm.NTMSequenceModel(
        memory_size=16, memory_width=8, controller_units=32)),
    "memn2n": lambda: memn2n.compile_memn2n(memn2n.MemN2NQA(
        vocab_size=30, answer_ids=[3, 4, 5], memory_size=10), optimizer="adam"),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_optimizer_state_survives_a_weights_round_trip(name, tmp_path):
    model = BUILDERS[name]()
    optimizer = model.optimizer
    # Built at compile: a step counter and a learning rate, and slots per weight.
    assert len(optimizer.variables) >= 2 + len(model.trainable_variables)
    rng = np.random.default_rng(0)
    for variable in optimizer.variables:
        shape = tuple(variable.shape)
        value = np.full(shape, 7) if "int" in variable.dtype else rng.normal(size=shape)
        variable.assign(value.astype(variable.dtype))
    path = str(tmp_path / "run.weights.h5")
    model.save_weights(path)

    restored = BUILDERS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Keras only warns when it skips the optimizer
        restored.load_weights(path)
    assert int(to_numpy(restored.optimizer.iterations)) == 7
    for want, got in zip(optimizer.variables, restored.optimizer.variables, strict=True):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(want), err_msg=want.path)
