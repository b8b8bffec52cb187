"""Exact ports of `tfa.seq2seq`: TF-Addons 0.23's outputs, recorded by
`tfa_parity/record.py` (TF 2.15), against keras-attn with the same weights."""

import hashlib
import os
import re
import shutil

import keras
import numpy as np
import pytest
from keras import ops

import keras_attn
from keras_attn.decoding import beam_search
from tests.keras_attn.contract import to_numpy

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tfa_parity")
TOLERANCE = 1e-5
END, START = 2, 1


def _fixture(name):
    with np.load(os.path.join(FIXTURES, f"{name}.npz")) as archive:
        groups = {"input": {}, "var": {}, "output": {}}
        for key in archive.files:
            group, name_ = key.split("/", 1)
            groups[group][name_] = archive[key]
    return groups["input"], groups["var"], groups["output"]


def _set_weights(layer, by_suffix):
    """Each weight of `layer` from the array whose key ends its path; a bias
    TF-Addons does not have stays zero. Every array must be used."""
    used = set()
    for weight in layer.weights:
        matches = [k for k in by_suffix if weight.path.endswith(k)]
        if not matches:
            assert weight.path.endswith("bias"), f"no TF-Addons value for {weight.path}"
            weight.assign(np.zeros(weight.shape, "float32"))
            continue
        key = max(matches, key=len)
        weight.assign(np.reshape(by_suffix[key], weight.shape))
        used.add(key)
    assert used == set(by_suffix), f"unused TF-Addons variables: {set(by_suffix) - used}"


def _mechanism_weights(var, prefix=""):
    names = {"memory_layer/kernel": "key_projection/kernel",
             "query_layer/kernel": "query_projection/kernel",
             "attention_v": "/v", "attention_b": "additive_score/bias",
             "attention_g": None, "attention_score_bias": "score_bias"}
    mapped = {}
    for tfa_name, value in var.items():
        if not tfa_name.startswith(prefix):
            continue
        short = tfa_name[len(prefix):]
        ours = names[short]
        if ours is None:  # the normalised v's g (Bahdanau) or the score's scale (Luong)
            ours = "/g" if "attention_v" in {k[len(prefix):] for k in var} else "/scale"
        mapped[ours] = value
    return mapped


def _mask(inputs, batch_size=None):
    lengths = inputs.get("lengths")
    length = inputs["memory"].shape[1]
    return np.arange(length)[None] < lengths[:, None]


MECHANISMS = {
    "bahdanau": lambda: keras_attn.BahdanauAttention(7),
    "bahdanau_normalize": lambda: keras_attn.BahdanauAttention(7, normalize=True),
    "luong": lambda: keras_attn.LuongAttention("general"),
    "luong_scale": lambda: keras_attn.LuongAttention("general", scale=True),
}
for _mode in ("parallel", "recursive", "hard"):
    MECHANISMS[f"bahdanau_monotonic_{_mode}"] = lambda mode=_mode: keras_attn.MonotonicAttention(
        score="additive", units=7, mode=mode)
    MECHANISMS[f"luong_monotonic_{_mode}"] = lambda mode=_mode: keras_attn.MonotonicAttention(
        score="general", mode=mode)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_attention_mechanisms_match_tf_addons(name):
    inputs, var, expected = _fixture(name)
    layer = MECHANISMS[name]()
    kwargs = {"mask": _mask(inputs), "return_attention_scores": True}
    if "monotonic" in name:
        kwargs["previous_alignment"] = inputs["previous"]
    layer(inputs["query"], inputs["memory"], **kwargs)  # builds
    _set_weights(layer, _mechanism_weights(var))
    context, alignments = layer(inputs["query"], inputs["memory"], **kwargs)
    alignments = to_numpy(alignments).reshape(expected["alignments"].shape)
    np.testing.assert_allclose(alignments, expected["alignments"], atol=TOLERANCE)
    np.testing.assert_allclose(to_numpy(context), expected["context"], atol=TOLERANCE)


def _wrapper_cell(var, cell_type, output_attention, memory_depth):
    units = var["cell/recurrent_kernel"].shape[0]
    cell = {"gru": keras.layers.GRUCell, "lstm": keras.layers.LSTMCell}[cell_type](units)
    attention_units = var["mechanism/attention_v"].shape[0]
    layer_size = var["attention_layer/kernel"].shape[1]
    wrapper = keras_attn.AttentionWrapperCell(
        cell, keras_attn.BahdanauAttention(attention_units, use_bias=False),
        memory_size=memory_depth, attention_layer_size=layer_size,
        output_attention=output_attention, attention_layer_activation=None)
    return wrapper, units


def _set_wrapper_weights(wrapper, var, units, input_size):
    wrapper.build((None, input_size))
    for name in ("kernel", "recurrent_kernel", "bias"):
        getattr(wrapper.cell, name).assign(var[f"cell/{name}"])
    _set_weights(wrapper.attention, _mechanism_weights(var, prefix="mechanism/"))
    # TF-Addons' attention layer reads [h_t; c_t], ours [c_t; h_t].
    kernel = var["attention_layer/kernel"]
    wrapper.attention_layer.kernel.assign(np.concatenate([kernel[units:], kernel[:units]]))


@pytest.mark.parametrize("cell_type", ["gru", "lstm"])
@pytest.mark.parametrize("output_attention", [True, False])
def test_attention_wrapper_matches_tf_addons(cell_type, output_attention):
    inputs, var, expected = _fixture(
        f"wrapper_{cell_type}_output_attention_{str(output_attention).lower()}")
    memory, steps = inputs["memory"], inputs["steps"]
    wrapper, units = _wrapper_cell(var, cell_type, output_attention, memory.shape[-1])
    _set_wrapper_weights(wrapper, var, units, steps.shape[-1])
    states = wrapper.get_initial_state(memory, _mask(inputs))
    outputs, alignments = [], []
    for t in range(steps.shape[1]):
        output, states = wrapper(steps[:, t], states)
        outputs.append(to_numpy(output))
        alignments.append(to_numpy(states[wrapper.num_cell_states + 1]))
    np.testing.assert_allclose(np.stack(outputs, 1), expected["outputs"], atol=TOLERANCE)
    np.testing.assert_allclose(np.stack(alignments, 1), expected["alignments"], atol=TOLERANCE)


def _until_end(tokens):
    """Each row up to and including its first end token, then zeros (padding)."""
    tokens = np.array(tokens)
    for row in tokens.reshape(-1, tokens.shape[-1]):
        ends = np.flatnonzero(row == END)
        if ends.size:
            row[ends[0] + 1:] = 0
    return tokens


#: Beam search's scores and log-probabilities: sums of up to `max_length`
#: float32 log-softmaxes, divided by the length penalty. Two recordings on one
#: machine are bit-identical; an independent recording elsewhere moved by up to
#: 1.9e-5, so the tolerance is 2.5 times that. Tokens must be equal.
BEAM_TOLERANCE = 5e-5
BEAM_FIXTURES = sorted(n[:-4] for n in os.listdir(FIXTURES) if n.startswith("beam_search_"))


def _beam_search(name, ranking):
    inputs, var, expected = _fixture(name)
    memory, embedding = inputs["memory"], inputs["embedding"]
    beam_width, max_length = int(inputs["beam_width"]), int(inputs["max_length"])
    mask = _mask(inputs)
    wrapper, units = _wrapper_cell(var, "gru", True, memory.shape[-1])
    _set_wrapper_weights(wrapper, var, units, embedding.shape[1])
    output_layer = keras.layers.Dense(embedding.shape[0])
    output_layer.build((None, wrapper.output_size))
    output_layer.set_weights([var["output/kernel"], var["output/bias"]])
    n = wrapper.num_cell_states

    def step_fn(tokens, states):
        output, states = wrapper(ops.take(embedding, tokens, axis=0), states)
        return output_layer(output), states, states[n + 1]

    ours = beam_search(
        step_fn, wrapper.get_initial_state(memory, mask), memory.shape[0], beam_width,
        max_length, START, END, memory.shape[1], length_penalty_alpha=float(inputs["alpha"]),
        coverage_penalty_beta=float(inputs["beta"]), source_mask=mask, return_all_beams=True,
        ranking=ranking)
    theirs = np.transpose(expected["predicted_ids"], (0, 2, 1))  # (B, K, steps)
    theirs = np.pad(theirs, ((0, 0), (0, 0), (0, max_length - theirs.shape[-1])))
    return ours, theirs, expected


def test_the_beam_search_fixtures_have_beams_that_finish_at_different_steps():
    assert len(BEAM_FIXTURES) == 8  # (α, β) ∈ {0, 0.6} × {0, 0.2}, padded or not
    for name in BEAM_FIXTURES:
        inputs, _, expected = _fixture(name)
        lengths = expected["lengths"]
        assert len(set(lengths[lengths < int(inputs["max_length"])].tolist())) >= 3, name
    assert {bool(np.any(_fixture(n)[0]["lengths"] < _fixture(n)[0]["memory"].shape[1]))
            for n in BEAM_FIXTURES} == {False, True}


@pytest.mark.parametrize("name", BEAM_FIXTURES)
def test_beam_search_ranks_as_tf_addons(name):
    ours, theirs, expected = _beam_search(name, "tf_addons")
    np.testing.assert_array_equal(_until_end(to_numpy(ours["tokens"])), _until_end(theirs))
    np.testing.assert_allclose(to_numpy(ours["scores"]), expected["scores"],
                               atol=BEAM_TOLERANCE)
    np.testing.assert_allclose(to_numpy(ours["log_probs"]), expected["log_probs"],
                               atol=BEAM_TOLERANCE)
    np.testing.assert_array_equal(to_numpy(ours["lengths"]), expected["lengths"])


@pytest.mark.parametrize("name", BEAM_FIXTURES)
def test_the_default_ranking_matches_tf_addons_without_penalties_only(name):
    ours, theirs, expected = _beam_search(name, "gnmt")
    inputs = _fixture(name)[0]
    same = np.array_equal(_until_end(to_numpy(ours["tokens"])), _until_end(theirs))
    if float(inputs["alpha"]) == float(inputs["beta"]) == 0.0:
        assert same
        np.testing.assert_allclose(to_numpy(ours["scores"]), expected["scores"],
                                   atol=BEAM_TOLERANCE)
    elif name == "beam_search_a0_b0.2_full":  # where even the best sequences differ
        assert not np.array_equal(_until_end(to_numpy(ours["tokens"]))[:, 0],
                                  _until_end(theirs)[:, 0])
    # In every case, each beam's score is GNMT's `log P / lp + cp` of its own tokens
    # and alignments, and the beams come best first.
    alpha, beta = float(inputs["alpha"]), float(inputs["beta"])
    log_probs, lengths = to_numpy(ours["log_probs"]), to_numpy(ours["lengths"])
    coverage = to_numpy(ours["alignments"]).sum(axis=2)  # (B, K, T_in)
    terms = np.log(np.maximum(np.minimum(coverage, 1.0), 1e-10))
    terms = np.where(_mask(inputs)[:, None, :], terms, 0.0)
    expected = log_probs / ((5.0 + lengths) / 6.0) ** alpha + beta * terms.sum(-1)
    scores = to_numpy(ours["scores"])
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-4)
    assert np.all(np.diff(scores, axis=1) <= 1e-6)


def test_ranking_is_checked():
    with pytest.raises(ValueError, match=r"`ranking` must be one of .*received 'tfa'"):
        beam_search(lambda t, s: None, [np.zeros((1, 2), "float32")], 1, 2, 3, START, END, 4,
                    ranking="tfa")


GUIDE = os.path.join(os.path.dirname(FIXTURES), "..", "..", "docs", "guides", "migration.md")


def _guide_blocks():
    """`{title: code}` of the migration guide's Python blocks ("" for untitled)."""
    with open(GUIDE, encoding="utf-8") as f:
        found = re.findall(r'```python(?: title="([^"]*)")?\n(.*?)```', f.read(), re.DOTALL)
    return found


def test_the_guides_tf_addons_program_is_the_one_recorded():
    programs = [code for title, code in _guide_blocks() if title.startswith("TF-Addons")]
    assert len(programs) == 1
    with open(os.path.join(FIXTURES, "tfa_translator.sha256")) as f:
        recorded = f.read().strip()
    assert hashlib.sha256(programs[0].encode()).hexdigest() == recorded, (
        "the guide's TF-Addons program changed: record it again (tfa_parity/record.py program)")


def test_the_guides_port_of_a_whole_program_matches_tf_addons(tmp_path, monkeypatch):
    """The guide's keras-attn block, on the weights the guide's TF-Addons program
    trained: the same teacher-forced logits and loss, and the same beams."""
    ports = [code for title, code in _guide_blocks() if "load_tf_addons_weights" in code]
    assert len(ports) == 1
    shutil.copy(os.path.join(FIXTURES, "tfa_translator.npz"), tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(ports[0], GUIDE, "exec"), namespace)
    expected = np.load("tfa_translator.npz")
    np.testing.assert_allclose(to_numpy(namespace["logits"]), expected["logits"], atol=TOLERANCE)
    np.testing.assert_allclose(float(namespace["loss"]), expected["loss"], atol=TOLERANCE)
    lengths = to_numpy(namespace["beams"]["lengths"])
    np.testing.assert_array_equal(lengths, expected["lengths"])
    theirs = np.ascontiguousarray(np.transpose(expected["predicted_ids"], (0, 2, 1)))
    ours = to_numpy(namespace["beams"]["tokens"])[..., :theirs.shape[-1]]
    np.testing.assert_array_equal(_until_end(ours), _until_end(theirs))
    np.testing.assert_allclose(to_numpy(namespace["beams"]["scores"]), expected["scores"],
                               atol=BEAM_TOLERANCE)
    # The program trained: its best beams are the references (the reversed sources),
    # so this compares a model that decodes, not noise.
    best = _until_end(theirs)[:, 0]
    correct = [np.array_equal(row[row > END], target[target > END])
               for row, target in zip(best, expected["target_out"], strict=True)]
    assert all(correct), best
