"""models.schedules: the Transformer's inverse-square-root learning-rate schedule."""

import math

import keras
import numpy as np
import pytest
from keras import ops

from keras_attn.models.schedules import InverseSquareRootDecay


def _rates(schedule, steps):
    return [float(ops.convert_to_numpy(schedule(step))) for step in steps]


def test_warms_up_linearly_then_decays_as_the_inverse_square_root():
    schedule = InverseSquareRootDecay(2e-3, warmup_steps=50)
    # Keras passes the 0-based step; the formula counts from 1.
    warmup = _rates(schedule, [0, 24, 49])
    np.testing.assert_allclose(warmup, [2e-3 / 50, 2e-3 * 25 / 50, 2e-3], rtol=1e-6)
    decay = _rates(schedule, [49, 199, 799, 5049])
    np.testing.assert_allclose(
        decay, [2e-3 * math.sqrt(50 / s) for s in (50, 200, 800, 5050)], rtol=1e-6
    )
    assert max(_rates(schedule, range(0, 400, 7))) <= 2e-3 * (1 + 1e-6)


def test_one_warmup_step_starts_at_the_peak():
    assert _rates(InverseSquareRootDecay(1e-3, warmup_steps=1), [0, 3]) == pytest.approx(
        [1e-3, 5e-4]
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(peak=0.0, warmup_steps=10), r"`peak` must be a positive rate; received 0.0"),
        (dict(peak=1e-3, warmup_steps=0), r"`warmup_steps` must be an integer ≥ 1; received 0"),
        (dict(peak=1e-3, warmup_steps=2.5), r"`warmup_steps` must be an integer ≥ 1; received 2.5"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        InverseSquareRootDecay(**kwargs)


def test_a_model_compiled_with_it_round_trips_through_a_keras_file(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(InverseSquareRootDecay(3e-3, 100)), loss="mse")
    model.fit(np.ones((8, 3)), np.ones((8, 1)), batch_size=4, verbose=0)  # 2 steps
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path, safe_mode=True)
    # Step 2 of the warm-up: 3e-3 · 3 / 100, not a constant rate.
    assert float(ops.convert_to_numpy(restored.optimizer.learning_rate)) == pytest.approx(9e-5)
