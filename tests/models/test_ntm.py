import math
import os

import keras
import numpy as np
import pytest

from keras_attn.models.dnc import DNCSequenceModel
from keras_attn.models.ntm import (
    NTMSequenceModel,
    bit_errors,
    bits_per_sequence,
    compile_ntm,
    with_weightings,
)
from keras_attn.training.tasks.ntm.algorithmic import copy_batch


def test_copy_batch_layout(rng):
    x, y = copy_batch(rng, 4, 3, total_steps=9)
    assert x.shape == (4, 9, 9) and y.shape == (4, 9, 9)
    np.testing.assert_array_equal(x[:, 3, 8], 1.0)  # the delimiter
    assert not x[:, 4:].any() and not x[:, :3, 8].any()
    np.testing.assert_array_equal(y[:, 4:7, :8], x[:, :3, :8])  # the copy, after it
    np.testing.assert_array_equal(y[:, :, 8], [[0, 0, 0, 0, 1, 1, 1, 0, 0]] * 4)
    with pytest.raises(ValueError, match="total_steps"):
        copy_batch(rng, 1, 5, total_steps=9)


def test_cost_in_bits_and_bit_errors_by_hand():
    y = np.zeros((1, 2, 3), "float32")
    y[0, 1] = [1.0, 0.0, 1.0]  # one counted step; target bits (1, 0)
    logits = np.array([[[5.0, 5.0], [0.0, 2.0]]], "float32")
    # Only step 1 counts: bit 0, logit 0, target 1 → 1 bit; bit 1, logit 2, target 0.
    want = (math.log(2) + math.log(1 + math.exp(2.0))) / math.log(2)
    np.testing.assert_allclose(np.asarray(bits_per_sequence(y, logits)), [want], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(bit_errors(y, logits)), [2.0])


@pytest.mark.parametrize("model_class", [NTMSequenceModel, DNCSequenceModel],
                         ids=["ntm", "dnc"])
def test_fit_lowers_the_copy_cost_and_round_trips(model_class, rng, tmp_path):
    model = compile_ntm(model_class(memory_size=16, memory_width=8, controller_units=32),
                        learning_rate=3e-3)
    x, y = copy_batch(rng, 32, 3, total_steps=7)
    before = model.evaluate(x, y, verbose=0)[0]
    model.fit(x, y, batch_size=32, epochs=30, verbose=0)
    after = model.evaluate(x, y, verbose=0)[0]
    assert np.isfinite(after) and after < 0.8 * before
    probabilities, reads, writes = with_weightings(model).predict(x, verbose=0)
    assert probabilities.shape == (32, 7, 8) and reads.shape == (32, 7, 1, 16)
    if model_class is NTMSequenceModel:
        np.testing.assert_allclose(writes.sum(-1), 1.0, atol=1e-5)
    else:  # the DNC's write weighting sums to its write gate
        assert np.all(writes >= 0) and np.all(writes.sum(-1) <= 1 + 1e-5)
        assert writes.sum(-1).max() > 0.01
    path = os.path.join(tmp_path, "ntm.keras")
    model.save(path)
    loaded = keras.saving.load_model(
        path, safe_mode=True,
        custom_objects={"bits_per_sequence": bits_per_sequence, "bit_errors": bit_errors},
    )
    assert type(loaded) is model_class and loaded.get_config() == model.get_config()
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               atol=1e-5)
    # A longer sequence than any seen in training runs through the same model.
    long_x, _ = copy_batch(rng, 2, 12)
    assert loaded.predict(long_x, verbose=0).shape == (2, 25, 8)


@pytest.mark.parametrize("model_class", [NTMSequenceModel, DNCSequenceModel],
                         ids=["ntm", "dnc"])
@pytest.mark.parametrize("field, value, message", [
    ("input_bits", 0, r"`input_bits` must be a positive integer; received 0"),
    ("output_bits", 8.0, r"`output_bits` must be a positive integer; received 8\.0"),
    ("memory_size", -4, r"`memory_size` must be a positive integer; received -4"),
    ("clip_value", -1.0, r"`clip_value` must be a number > 0 or None; received -1\.0"),
])
def test_bad_arguments_are_named(model_class, field, value, message):
    with pytest.raises(ValueError, match=message):
        model_class(**{field: value})


def test_the_ntm_allows_no_write_head_but_not_a_negative_shift():
    assert NTMSequenceModel(write_heads=0, memory_size=8, controller_units=8).write_heads == 0
    with pytest.raises(ValueError, match=r"`shift_range` must be an integer ≥ 0; received -1"):
        NTMSequenceModel(shift_range=-1)
