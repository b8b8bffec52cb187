"""Ctrl-C during `fit`: a flag from the signal, the interrupt between batches."""

import os
import signal

import keras
import numpy as np
import pytest

from keras_attn.training.callbacks import CtrlC


class _PressAt(keras.callbacks.Callback):
    """Sends this process SIGINT at the start of one batch; counts finished batches."""

    def __init__(self, batch):
        super().__init__()
        self.batch, self.finished = batch, 0

    def on_train_batch_begin(self, batch, logs=None):
        if batch == self.batch:
            os.kill(os.getpid(), signal.SIGINT)

    def on_train_batch_end(self, batch, logs=None):
        self.finished += 1


def test_ctrl_c_stops_fit_at_the_end_of_the_batch_and_restores_the_handler():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    before = signal.getsignal(signal.SIGINT)
    ctrl_c, press = CtrlC(), _PressAt(batch=2)
    x, y = np.zeros((40, 3), "float32"), np.zeros((40, 1), "float32")
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, batch_size=4, epochs=3, verbose=0, callbacks=[ctrl_c, press])
    # The batch the signal came in ran to its end (3 optimizer steps), and that end
    # raised: CtrlC comes first, so the counter after it saw only batches 0 and 1.
    assert ctrl_c.pressed and press.finished == 2
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 3
    assert signal.getsignal(signal.SIGINT) == before
