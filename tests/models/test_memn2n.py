import os

import keras
import numpy as np
import pytest

from keras_attn.models.memn2n import (
    CandidateLogits,
    MemN2NQA,
    MemN2NSchedule,
    compile_memn2n,
    with_attention,
)
from keras_attn.training.tasks.memn2n import babi
from keras_attn.training.tasks.memn2n.stories import generate_questions


@pytest.fixture(scope="module")
def data():
    train = generate_questions(1, 600, seed=0)
    test = generate_questions(1, 200, seed=1)
    vocab = babi.build_vocabulary(train)
    sentence, question = babi.lengths_of(train)

    def arrays(questions):
        return babi.vectorize(questions, vocab, 20, sentence, question)

    arguments = dict(
        vocab_size=len(vocab),
        answer_ids=sorted({vocab.index[q.answer] for q in train}),
        memory_size=20, sentence_length=sentence, question_length=question,
    )
    return {"train": arrays(train), "test": arrays(test), "arguments": arguments, "vocab": vocab}


def test_fit_learns_single_supporting_facts_and_round_trips(data, tmp_path):
    model = compile_memn2n(MemN2NQA(**data["arguments"]))
    (x, y, _), (tx, ty, slots) = data["train"], data["test"]
    schedule = MemN2NSchedule(verbose=False)
    model.fit(x, y, validation_data=(tx, ty), batch_size=32, epochs=30, verbose=0,
              callbacks=[schedule])
    accuracy = model.evaluate(tx, ty, verbose=0)[1]
    assert accuracy > 0.9
    assert schedule.softmax_epoch is not None  # linear start ended
    logits, attention = with_attention(model).predict(tx, verbose=0)
    assert attention.shape == (200, 3, 20)
    assert np.mean(attention.sum(1).argmax(-1) == slots[:, 0]) > 0.8
    path = os.path.join(tmp_path, "memn2n.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded) is MemN2NQA and loaded.get_config() == model.get_config()
    np.testing.assert_allclose(loaded.predict(tx, verbose=0), logits, atol=1e-5)
    assert float(np.asarray(loaded.get_layer("memn2n").softmax_enabled.value)) == 1.0


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_nil_word_embeds_to_zero_and_stays_there_after_steps(data, optimizer):
    keras.utils.set_random_seed(1)
    model = compile_memn2n(MemN2NQA(**data["arguments"]), optimizer=optimizer)
    memory = model.get_layer("memn2n")
    before = [np.array(t.numpy()) for t in memory.word_tables]
    x, y, _ = data["train"]
    for start in range(0, 96, 32):
        model.train_on_batch({k: v[start:start + 32] for k, v in x.items()}, y[start:start + 32])
    after = [np.array(t.numpy()) for t in memory.word_tables]
    assert all(np.all(t[0] == 0) for t in before + after)
    assert all(np.any(a[1:] != b[1:]) for a, b in zip(after, before, strict=True))  # the others learn


def test_position_encoding_form_sets_the_layers_width(data):
    arguments = data["arguments"]
    code = MemN2NQA(**arguments).get_layer("memn2n")
    assert code.position_encoding_length == max(arguments["sentence_length"],
                                                arguments["question_length"]) + 1
    paper = MemN2NQA(**arguments, position_encoding_form="paper")
    assert paper.get_layer("memn2n").position_encoding_length is None
    with pytest.raises(ValueError, match="position_encoding_form.*'paper'.*received 'matlab'"):
        MemN2NQA(**arguments, position_encoding_form="matlab")


def test_predictions_are_always_candidate_answers(data):
    model = MemN2NQA(**data["arguments"])
    logits = model.predict(data["test"][0], verbose=0)
    assert set(logits.argmax(-1).tolist()) <= set(data["arguments"]["answer_ids"])
    with pytest.raises(ValueError, match="`candidate_ids`"):
        CandidateLogits([99], vocab_size=10)


@pytest.mark.parametrize("fields, message", [
    ({"answer_ids": []}, r"`answer_ids` must be a non-empty list of ids in \[0, 30\); received \[\]"),
    ({"answer_ids": [3, 30]}, r"`answer_ids` .* received \[3, 30\]"),
    ({"answer_ids": [2.0]}, r"`answer_ids` .* received \[2\.0\]"),
    ({"sentence_length": 0}, r"`sentence_length` must be a positive integer or None; received 0"),
    ({"question_length": -2}, r"`question_length` must be a positive integer or None; received -2"),
    ({"hops": 2.0}, r"`hops` must be a positive integer; received 2\.0"),
    ({"seed": -1}, r"`seed` must be an integer ≥ 0; received -1"),
])
def test_bad_arguments_are_named(fields, message):
    with pytest.raises(ValueError, match=message):
        MemN2NQA(**{"vocab_size": 30, "answer_ids": [3, 4], **fields})


class _FakeModel:
    def __init__(self, linear):
        self.memory = type("M", (), {})()
        # Non-trainable, as the layer's flag and the optimizer's rate are (on torch a
        # trainable variable requires grad, and NumPy cannot read it).
        self.memory.softmax_enabled = keras.Variable(0.0 if linear else 1.0, trainable=False)
        self.optimizer = type("O", (), {"learning_rate": keras.Variable(0.0, trainable=False)})()

    def get_layer(self, name):
        return self.memory


def test_schedule_halves_the_rate_and_ends_linear_start_on_a_plateau():
    schedule = MemN2NSchedule(learning_rate=0.01, halve_every=25, linear_start_rate=0.005,
                              linear_start_epochs=None, patience=2, max_linear_epochs=20,
                              verbose=False)
    schedule.set_model(_FakeModel(linear=True))
    rates = []
    losses = [5.0, 4.0, 3.0, 3.5, 3.2] + [1.0] * 60
    for epoch, loss in enumerate(losses):
        schedule.on_epoch_begin(epoch)
        rates.append(float(keras.ops.convert_to_numpy(schedule.model.optimizer.learning_rate.value)))
        schedule.on_epoch_end(epoch, {"val_loss": loss})
    # Two epochs without a better validation loss (3.5, 3.2) end the linear phase.
    assert schedule.softmax_epoch == 5
    assert rates[:5] == pytest.approx([0.005] * 5)
    assert rates[5] == pytest.approx(0.01) and rates[29] == pytest.approx(0.01)
    assert rates[30] == pytest.approx(0.005) and rates[55] == pytest.approx(0.0025)


def test_schedule_caps_linear_start_and_runs_plain_without_it():
    capped = MemN2NSchedule(linear_start_epochs=None, patience=100, max_linear_epochs=3,
                            verbose=False)
    capped.set_model(_FakeModel(linear=True))
    for epoch in range(5):
        capped.on_epoch_begin(epoch)
        capped.on_epoch_end(epoch, {"val_loss": 10.0 - epoch})
    assert capped.softmax_epoch == 3
    plain = MemN2NSchedule(learning_rate=0.02, halve_every=2, verbose=False)
    plain.set_model(_FakeModel(linear=False))
    for epoch in range(5):
        plain.on_epoch_begin(epoch)
    assert float(keras.ops.convert_to_numpy(plain.model.optimizer.learning_rate.value)) == pytest.approx(0.005)


def test_float_ids_are_refused_not_truncated(data):
    """Keras would cast the ids 1.7 → 1 silently; the model names the input instead,
    as the `MemN2N` layer does. Whole-number floats cast exactly and pass."""
    model = MemN2NQA(**data["arguments"])
    story, question = data["train"][0]["story"][:2], data["train"][0]["question"][:2]
    expected = keras.ops.convert_to_numpy(model({"story": story, "question": question}))
    whole = model({"story": story.astype("float64"), "question": question})
    np.testing.assert_allclose(keras.ops.convert_to_numpy(whole), expected, rtol=1e-6)
    with pytest.raises(ValueError, match=r"`story` holds integer ids; received float32 values "
                                         r"that are not whole numbers"):
        model({"story": story.astype("float32") + 0.7, "question": question})
    with pytest.raises(ValueError, match=r"`question` holds integer ids; received float64"):
        model.predict({"story": story, "question": question + 0.5}, verbose=0)
    with pytest.raises(ValueError, match=r"`question` holds integer ids"):
        model.fit({"story": story, "question": question + 0.5}, np.array([4, 4]), verbose=0)
