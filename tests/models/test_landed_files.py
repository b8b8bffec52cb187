"""Models saved by the landed code (config dataclasses and `build_*` functions) still
load, and answer as they did: `landed/written_by.py` says how the files were made."""

import pathlib

import keras
import numpy as np
import pytest

# The custom layers register on import, as they do for a task that loads its model.
from keras_attn.models import dnc, memn2n, ntm, pointer_net, translator  # noqa: F401

LANDED = pathlib.Path(__file__).parent / "landed"
NAMES = ("translator", "transformer", "pointer_net", "memn2n", "ntm", "dnc", "dnc_qa")


@pytest.mark.parametrize("name", NAMES)
def test_a_file_of_the_landed_code_loads_and_answers_as_then(name):
    model = keras.saving.load_model(LANDED / f"{name}.keras")
    recorded = np.load(LANDED / f"{name}.npz")
    inputs = {key.removeprefix("input_"): recorded[key]
              for key in recorded.files if key.startswith("input_")}
    if list(inputs) == ["sequence"]:
        inputs = inputs["sequence"]
    outputs = np.asarray(model(inputs, training=False))
    np.testing.assert_allclose(outputs, recorded["outputs"], rtol=1e-5, atol=1e-5)


def test_every_model_of_the_zoo_has_a_landed_file():
    assert sorted(p.stem for p in LANDED.glob("*.keras")) == sorted(NAMES)
