import keras
import numpy as np
import pytest
from keras import ops

from keras_attn.memory import MemN2N, MemoryHop, position_encoding_weights
from tests.keras_attn.contract import run_layer_contract, to_numpy

VOCAB, DIM, HOPS, SLOTS, WORDS = 23, 6, 3, 7, 5


def _story(rng, batch=3, filled=(7, 4, 0)):
    """Ids (batch, SLOTS, WORDS): the first `filled[b]` slots hold 1–5 word sentences."""
    story = np.zeros((batch, SLOTS, WORDS), "int32")
    for b, n in enumerate(filled):
        for slot in range(n):
            length = rng.integers(1, WORDS + 1)
            story[b, slot, :length] = rng.integers(1, VOCAB, length)
    return story


def _question(rng, batch=3):
    question = np.zeros((batch, 4), "int32")
    question[:, :3] = rng.integers(1, VOCAB, (batch, 3))
    return question


def _reference(layer, story, question, empty_zero=False):
    """The paper's equations in numpy, from the layer's weights (with the
    authors' code's position encoding where the layer has a fixed width)."""
    w = {v.path.split("/")[-1]: keras.ops.convert_to_numpy(v.value) for v in layer.weights}
    width = layer.position_encoding_length

    def pe(ids):
        length = max(int((ids != 0).sum()), 1)
        out = np.zeros((len(ids), DIM))
        for j in range(1, len(ids) + 1):
            for k in range(1, DIM + 1):
                if width is None:
                    out[j - 1, k - 1] = (1 - j / length) - (k / DIM) * (1 - 2 * j / length)
                else:
                    out[j - 1, k - 1] = (
                        1 + 4 * (k - (DIM + 1) / 2) * (j - (width + 1) / 2) / (DIM * width)
                    )
        return out * (ids != 0)[:, None]

    def embed(ids, table):
        return (table[ids] * pe(ids)).sum(0)

    if layer.weight_tying == "adjacent":
        tables = [w[f"embedding_{k}"] for k in range(HOPS + 1)]
        times = [w[f"temporal_{k}"] for k in range(HOPS + 1)]
        hop_tables = [(tables[k], tables[k + 1], times[k], times[k + 1]) for k in range(HOPS)]
        question_table, answer_table, state_map = tables[0], tables[-1], None
    else:
        hop_tables = [(w["embedding_a"], w["embedding_c"], w["temporal_a"], w["temporal_c"])] * HOPS
        question_table, answer_table, state_map = w["embedding_b"], w["answer"], w["state_map"]
    logits, attention = [], []
    for b in range(len(story)):
        u = embed(question[b], question_table)
        hops = []
        real = [s for s in range(SLOTS) if story[b, s].any()]
        empty = [s for s in range(SLOTS) if s not in real]
        if empty_zero:  # the authors' code: empty slots are zero vectors in the softmax
            real = list(range(SLOTS))
        for a, c, ta, tc in hop_tables:
            m = np.stack([embed(story[b, s], a) + ta[s] for s in range(SLOTS)])
            cm = np.stack([embed(story[b, s], c) + tc[s] for s in range(SLOTS)])
            if empty_zero:
                m[empty], cm[empty] = 0.0, 0.0
            p = np.zeros(SLOTS)
            if real:
                scores = m[real] @ u
                p[real] = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
            o = p @ cm
            u = (u @ state_map if state_map is not None else u) + o
            hops.append(p)
        logits.append(answer_table @ u)
        attention.append(np.stack(hops))
    return np.stack(logits), np.stack(attention)


@pytest.mark.parametrize("tying, width", [("adjacent", None), ("layerwise", None),
                                          ("adjacent", WORDS + 1)])
def test_matches_the_papers_equations(tying, width, rng):
    layer = MemN2N(VOCAB, DIM, HOPS, SLOTS, weight_tying=tying, position_encoding_length=width)
    story, question = _story(rng), _question(rng)
    logits, attention = layer(story, question)
    want_logits, want_attention = _reference(layer, story, question)
    np.testing.assert_allclose(to_numpy(logits), want_logits, atol=1e-5)
    np.testing.assert_allclose(to_numpy(attention), want_attention, atol=1e-6)


def test_position_encoding_by_hand():
    # J = 2, d = 2: l_kj = (1 - j/2) - (k/2)(1 - j)
    weights = to_numpy(position_encoding_weights(np.array([[4, 9, 0]]), 2))[0]
    np.testing.assert_allclose(weights, [[0.5, 0.5], [0.5, 1.0], [0.0, 0.0]], atol=1e-7)
    # Each sentence's own length: more padding changes nothing.
    longer = to_numpy(position_encoding_weights(np.array([[4, 9, 0, 0, 0]]), 2))[0]
    np.testing.assert_allclose(longer[:3], weights, atol=1e-7)


def test_position_encoding_of_the_authors_code_by_hand():
    # J = 3, d = 2: l_kj = 1 + 4 (k - 3/2)(j - 2) / 6, the same J for every sentence.
    weights = to_numpy(position_encoding_weights(np.array([[4, 9, 0]]), 2, length=3))[0]
    np.testing.assert_allclose(weights, [[4 / 3, 2 / 3], [1.0, 1.0], [0.0, 0.0]], atol=1e-6)
    shorter = to_numpy(position_encoding_weights(np.array([[4, 0, 0]]), 2, length=3))[0]
    np.testing.assert_allclose(shorter[0], weights[0], atol=1e-7)


@pytest.mark.parametrize("tying, weights", [("adjacent", 2 * (HOPS + 1)), ("layerwise", 7)])
def test_layer_contract(tying, weights, rng):
    run_layer_contract(
        MemN2N,
        {"vocab_size": VOCAB, "embedding_dim": DIM, "hops": HOPS, "memory_size": SLOTS,
         "weight_tying": tying, "random_noise": 0.0},
        {"story": _story(rng), "question": _question(rng)},
        [(3, VOCAB), (3, HOPS, SLOTS)],
        expect_trainable_weights=weights,
    )


def test_memory_hop_contract(rng):
    mask = np.ones((2, 5), bool)
    mask[1, 3:] = False
    run_layer_contract(
        MemoryHop, {},
        {"query": rng.normal(size=(2, 4)).astype("float32"),
         "input_memory": rng.normal(size=(2, 5, 4)).astype("float32"),
         "output_memory": rng.normal(size=(2, 5, 4)).astype("float32"),
         "memory_mask": mask},
        [(2, 4), (2, 5)], fit=False,
    )


def test_empty_story_reads_nothing_in_softmax_and_linear_mode(rng):
    story, question = np.zeros((2, SLOTS, WORDS), "int32"), _question(rng, 2)
    for linear in (False, True):
        layer = MemN2N(VOCAB, DIM, HOPS, SLOTS, linear_start=linear)
        logits, attention = layer(story, question)
        assert np.all(to_numpy(attention) == 0.0)
        table = to_numpy(layer.word_tables[0])
        answer = to_numpy(layer.word_tables[-1])
        u = (table[question] * to_numpy(position_encoding_weights(question, DIM))).sum(1)
        np.testing.assert_allclose(to_numpy(logits), u @ answer.T, atol=1e-5)


def test_linear_start_uses_raw_scores_until_switched(rng):
    story, question = _story(rng), _question(rng)
    layer = MemN2N(VOCAB, DIM, HOPS, SLOTS, linear_start=True)
    _, linear = layer(story, question)
    linear = to_numpy(linear)
    assert not np.allclose(linear.sum(-1)[:2], 1.0)  # unnormalised
    assert np.all(linear[1, :, 4:] == 0.0) and np.all(linear[2] == 0.0)  # padding still 0
    layer.softmax_enabled.assign(1.0)
    _, soft = layer(story, question)
    np.testing.assert_allclose(to_numpy(soft).sum(-1)[:2], 1.0, atol=1e-5)


def test_random_noise_only_while_training(rng):
    story, question = _story(rng), _question(rng)
    layer = MemN2N(VOCAB, DIM, HOPS, SLOTS, random_noise=0.5, seed=3)
    a, b = layer(story, question), layer(story, question)
    np.testing.assert_array_equal(to_numpy(a[0]), to_numpy(b[0]))
    noisy = [to_numpy(layer(story, question, training=True)[0]) for _ in range(3)]
    assert any(not np.allclose(n, to_numpy(a[0])) for n in noisy)
    quiet = MemN2N(VOCAB, DIM, HOPS, SLOTS, random_noise=0.0)
    np.testing.assert_array_equal(to_numpy(quiet(story, question, training=True)[0]),
                                  to_numpy(quiet(story, question)[0]))


def test_bad_arguments_and_inputs_raise_clear_errors(rng):
    layer = MemN2N(VOCAB, DIM, HOPS, SLOTS)
    with pytest.raises(ValueError, match=r"`story` must have rank 3.*\(3, 7\)"):
        layer(np.ones((3, 7), "int32"), _question(rng))
    with pytest.raises(ValueError, match=r"memory_size=7.*\(3, 9, 5\)"):
        MemN2N(VOCAB, DIM, HOPS, SLOTS)(np.ones((3, 9, 5), "int32"), _question(rng))
    with pytest.raises(ValueError, match="`weight_tying`"):
        MemN2N(VOCAB, weight_tying="tied")
    with pytest.raises(ValueError, match="`hops`"):
        MemN2N(VOCAB, hops=0)
    with pytest.raises(ValueError, match="`query` and `input_memory`.*embedding size"):
        MemoryHop()(ops.ones((2, 3)), ops.ones((2, 5, 4)), ops.ones((2, 5, 4)))


def test_mixed_precision_empty_and_full_memories_are_finite(rng):
    layer = MemN2N(VOCAB, DIM, HOPS, SLOTS, dtype="mixed_float16")
    logits, attention = layer(_story(rng), _question(rng))
    assert keras.backend.standardize_dtype(logits.dtype) == "float16"
    assert np.all(np.isfinite(to_numpy(logits))) and np.all(np.isfinite(to_numpy(attention)))


def test_empty_slots_zero_stay_in_the_softmax_with_score_and_read_zero(rng):
    story, question = _story(rng), _question(rng)
    layer = MemN2N(VOCAB, DIM, HOPS, SLOTS, empty_slots="zero", position_encoding_length=WORDS + 1)
    logits, attention = layer(story, question)
    expected_logits, expected_attention = _reference(layer, story, question, empty_zero=True)
    np.testing.assert_allclose(to_numpy(attention), expected_attention, atol=1e-5)
    np.testing.assert_allclose(to_numpy(logits), expected_logits, atol=1e-4)
    # The story with no sentence spreads its weight evenly over its empty slots.
    np.testing.assert_allclose(to_numpy(attention)[2], 1.0 / SLOTS, atol=1e-6)
    with pytest.raises(ValueError, match=r"`empty_slots` must be one of .*received 'drop'"):
        MemN2N(VOCAB, DIM, HOPS, SLOTS, empty_slots="drop")


@pytest.mark.parametrize("tying", ["adjacent", "layerwise"])
def test_every_table_starts_from_its_own_draw(tying, rng):
    layer = MemN2N(VOCAB, DIM, HOPS, SLOTS, weight_tying=tying)
    layer(_story(rng), _question(rng))
    tables = [to_numpy(t) for t in layer.word_tables + layer.time_tables]
    for i in range(len(tables)):
        for j in range(i + 1, len(tables)):
            if tables[i].shape == tables[j].shape:
                assert not np.allclose(tables[i][1:], tables[j][1:]), (i, j)
    seeded = [MemN2N(VOCAB, DIM, HOPS, SLOTS, weight_tying=tying,
                     embeddings_initializer=keras.initializers.RandomNormal(stddev=0.1, seed=5))
              for _ in range(2)]
    for one in seeded:
        one(_story(rng), _question(rng))
    for a, b in zip(seeded[0].word_tables, seeded[1].word_tables, strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))  # a seed still fixes them
    assert not np.allclose(to_numpy(seeded[0].word_tables[0])[1:],
                           to_numpy(seeded[0].word_tables[1])[1:])


def test_tensorflow_gradient_of_the_tables_is_dense(rng):
    """Per-weight clipping must see the summed gradient, not one row per occurrence."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("TensorFlow's gather gradient is the one that comes as IndexedSlices")
    import tensorflow as tf

    layer = MemN2N(VOCAB, DIM, HOPS, SLOTS)
    story, question = _story(rng), _question(rng)
    with tf.GradientTape() as tape:
        logits, _ = layer(story, question)
        loss = tf.reduce_sum(logits)
    for gradient in tape.gradient(loss, layer.word_tables + layer.time_tables):
        assert not isinstance(gradient, tf.IndexedSlices)
