"""Ctrl-C during `fit`: a flag from the signal, the interrupt between batches; the
backup written atomically, and a damaged one set aside."""

import os
import signal

import keras
import numpy as np
import pytest

from keras_attn.training.callbacks import CtrlC, ResumeReport


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


def _model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def test_the_backup_is_written_beside_and_renamed(tmp_path, monkeypatch):
    # Keras's `BackupAndRestore` has one writer, a private method this class
    # overrides: if Keras renames it, this fails rather than the backup going back
    # to being written in place.
    assert callable(getattr(keras.callbacks.BackupAndRestore, "_save_model", None))
    x, y = np.ones((8, 3), "float32"), np.ones((8, 1), "float32")
    written = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (written.append(os.path.basename(b)),
                                                     real_replace(a, b)))
    backup = ResumeReport(str(tmp_path / "backup"))
    backup.delete_checkpoint = False
    model = _model()
    model.fit(x, y, epochs=2, verbose=0, callbacks=[backup])
    assert written == ["latest.weights.h5", "training_metadata.json"] * 2
    assert sorted(os.listdir(tmp_path / "backup")) == ["latest.weights.h5",
                                                        "training_metadata.json"]
    again = _model()
    resumed = ResumeReport(str(tmp_path / "backup"))
    again.fit(x, y, epochs=3, verbose=0, callbacks=[resumed])
    assert resumed.initial_epoch == 2 and resumed.epochs_run == 1


def test_a_backup_that_cannot_be_read_is_set_aside(tmp_path, capsys):
    backup = tmp_path / "backup"
    backup.mkdir()
    (backup / "latest.weights.h5").write_bytes(b"\x89HDF" + bytes(96))
    (backup / "training_metadata.json").write_text('{"epoch": 1, "batch": 0}')
    resumed = ResumeReport(str(backup))
    _model().fit(np.ones((8, 3)), np.ones((8, 1)), epochs=2, verbose=0, callbacks=[resumed])
    assert resumed.initial_epoch == 0 and resumed.epochs_run == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"the backup in {backup} cannot be read (")
    assert err[0].endswith("and starting over")
    aside = [n for n in os.listdir(tmp_path) if n.startswith("backup.damaged-")]
    assert len(aside) == 1 and os.listdir(tmp_path / aside[0])


def test_translation_progress_stops_on_the_validation_figure_and_keeps_the_best(
        monkeypatch, capsys):
    from keras_attn.training.tasks.translator import decoding as translator
    from keras_attn.training.tasks.translator.data import TranslationData

    figures = iter([10.0, 20.0, 15.0, 14.0, 13.0, 30.0])  # BLEU after each epoch
    monkeypatch.setattr(translator, "translate_texts", lambda *a, **k: ["x"])
    monkeypatch.setattr(translator, "score", lambda kind, h, r: {
        "bleu": next(figures), "chrf": 0.0, "bleu_lowercase": 0.0, "unk_share": 0.0,
        "exact_match": 0.0, "n": 1})
    from keras_attn.models import TranslatorPreprocessor

    data = TranslationData(kind="text", splits={"validation": [("a", "b")]},
                           preprocessor=TranslatorPreprocessor(["a"], ["b"], level="word"),
                           train_ids=((), ()))
    progress = translator.TranslationProgress(data, {"kind": "text", "preprocess": {}},
                                              patience=3)

    class Mark(keras.callbacks.Callback):  # each epoch's weights: the epoch's number
        def on_epoch_end(self, epoch, logs=None):
            self.model.set_weights([np.full_like(w, epoch + 1) for w in
                                    self.model.get_weights()])

    model = _model()
    model.fit(np.ones((4, 3)), np.ones((4, 1)), epochs=6, verbose=0,
              callbacks=[Mark(), progress])
    assert [h["epoch"] for h in progress.history] == [1, 2, 3, 4, 5]  # stopped after 5
    assert progress.best_epoch == 2
    assert all(np.all(w == 2) for w in model.get_weights())  # epoch 2's weights kept
    out = capsys.readouterr().out
    assert "no better validation figure for 3 epochs: stopping" in out
    assert "keeping epoch 2's weights" in out
