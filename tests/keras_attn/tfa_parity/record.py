"""Records TF-Addons 0.23 outputs as `.npz` fixtures for `test_tfa_parity.py`.

TF-Addons does not import beside TF 2.21, so this script runs in its own virtual
environment, once, and CI only reads what it wrote:

    python3.11 -m venv /tmp/tfa && /tmp/tfa/bin/pip install "tensorflow-cpu==2.15.*" \\
        "tensorflow-addons==0.23.*" "numpy<2"
    /tmp/tfa/bin/python tests/keras_attn/tfa_parity/record.py [GROUP ...]

GROUP is any of `mechanisms`, `wrappers`, `beam_search` and `program` (all by
default). `program` runs the TF-Addons program of the migration guide as it is
written there; it saves `tfa_translator.npz`, and `tfa_translator.sha256` records
the program's text, so that the test notices when the guide's program changes.

Each fixture holds `input/NAME` arrays, TF-Addons' variables as `var/NAME` (their
names without the scope and `:0`), and its outputs as `output/NAME`; the test
copies the variables into the keras-attn layers and compares. Seeds are fixed, so
a rerun writes the same numbers.
"""

import argparse
import hashlib
import os
import re

import numpy as np
import tensorflow as tf
import tensorflow_addons as tfa

HERE = os.path.dirname(os.path.abspath(__file__))
GUIDE = os.path.join(HERE, "..", "..", "..", "docs", "guides", "migration.md")
PROGRAM_TITLE = "TF-Addons 0.23 (TensorFlow 2.15): train, translate, save"
BATCH, MEMORY_LENGTH, MEMORY_DEPTH, QUERY_DEPTH, UNITS = 3, 5, 6, 4, 7
LENGTHS = np.array([5, 3, 1], "int32")


def _variables(layer):
    """`{name: value}` of a mechanism's, cell's or Dense layer's variables, named
    by the attribute that holds them (TF's own names repeat `kernel`)."""
    named = {}
    for attribute in ("memory_layer", "query_layer"):
        sublayer = getattr(layer, attribute, None)
        if sublayer is not None:
            named[f"{attribute}/kernel"] = sublayer.kernel.numpy()
    for attribute in ("kernel", "recurrent_kernel", "bias"):
        variable = getattr(layer, attribute, None)
        if isinstance(variable, tf.Variable):
            named[attribute] = variable.numpy()
    for variable in layer.variables:  # the mechanism's own: attention_v, _g, _b, ...
        name = variable.name.split(":")[0].split("/")[-1]
        if name.startswith("attention_"):
            named[name] = variable.numpy()
    return named


def _save(name, inputs, variables, outputs):
    if not _saving:
        return
    arrays = {f"input/{k}": np.asarray(v) for k, v in inputs.items()}
    arrays.update({f"var/{k}": np.asarray(v) for k, v in variables.items()})
    arrays.update({f"output/{k}": np.asarray(v) for k, v in outputs.items()})
    path = os.path.join(HERE, f"{name}.npz")
    np.savez(path, **arrays)
    print(f"wrote {path}: {sorted(arrays)}")


def _randomize(layer, rng, scale=0.5):
    for variable in layer.variables:
        variable.assign(rng.normal(scale=scale, size=variable.shape).astype("float32"))


def mechanism_fixtures(rng):
    memory = rng.normal(size=(BATCH, MEMORY_LENGTH, MEMORY_DEPTH)).astype("float32")
    query = rng.normal(size=(BATCH, QUERY_DEPTH)).astype("float32")
    first = np.eye(MEMORY_LENGTH, dtype="float32")[[0, 1, 0]]  # previous alignments
    inputs = {"memory": memory, "lengths": LENGTHS, "query": query, "previous": first}
    cases = {
        "bahdanau": lambda: tfa.seq2seq.BahdanauAttention(
            UNITS, memory=memory, memory_sequence_length=LENGTHS),
        "bahdanau_normalize": lambda: tfa.seq2seq.BahdanauAttention(
            UNITS, memory=memory, memory_sequence_length=LENGTHS, normalize=True),
        "luong": lambda: tfa.seq2seq.LuongAttention(
            QUERY_DEPTH, memory=memory, memory_sequence_length=LENGTHS),
        "luong_scale": lambda: tfa.seq2seq.LuongAttention(
            QUERY_DEPTH, memory=memory, memory_sequence_length=LENGTHS, scale=True),
    }
    for mode in ("parallel", "recursive", "hard"):
        cases[f"bahdanau_monotonic_{mode}"] = lambda mode=mode: (
            tfa.seq2seq.BahdanauMonotonicAttention(
                UNITS, memory=memory, memory_sequence_length=LENGTHS, mode=mode,
                score_bias_init=0.3))
        cases[f"luong_monotonic_{mode}"] = lambda mode=mode: (
            tfa.seq2seq.LuongMonotonicAttention(
                QUERY_DEPTH, memory=memory, memory_sequence_length=LENGTHS, mode=mode,
                score_bias_init=-0.2))
    for name, make in cases.items():
        mechanism = make()
        mechanism([query, first])  # creates the variables
        _randomize(mechanism, rng)
        # The keys were projected when the memory was set: project them again.
        mechanism.setup_memory(memory, memory_sequence_length=LENGTHS)
        alignments, _ = mechanism([query, first])
        context = tf.einsum("bt,btd->bd", alignments, memory)
        _save(name, inputs, _variables(mechanism),
              {"alignments": alignments, "context": context})


def _wrapper(rng, cell_type, memory, output_attention, units=8, attention_units=6,
             attention_layer_size=5):
    cell = {"gru": tf.keras.layers.GRUCell, "lstm": tf.keras.layers.LSTMCell}[cell_type](units)
    mechanism = tfa.seq2seq.BahdanauAttention(
        attention_units, memory=memory["memory"],
        memory_sequence_length=memory["lengths"])
    return tfa.seq2seq.AttentionWrapper(
        cell, mechanism, attention_layer_size=attention_layer_size,
        output_attention=output_attention), cell, mechanism


def wrapper_fixtures(rng):
    memory = {"memory": rng.normal(size=(BATCH, MEMORY_LENGTH, MEMORY_DEPTH)).astype("float32"),
              "lengths": LENGTHS}
    steps = rng.normal(size=(BATCH, 4, 3)).astype("float32")
    for cell_type in ("gru", "lstm"):
        for output_attention in (True, False):
            wrapper, cell, mechanism = _wrapper(rng, cell_type, memory, output_attention)
            state = wrapper.get_initial_state(batch_size=BATCH, dtype=tf.float32)
            wrapper(steps[:, 0], state)  # creates the variables
            for layer in (cell, mechanism, wrapper._attention_layers[0]):
                _randomize(layer, rng)
            mechanism.setup_memory(memory["memory"], memory_sequence_length=memory["lengths"])
            outputs, alignments = [], []
            state = wrapper.get_initial_state(batch_size=BATCH, dtype=tf.float32)
            for t in range(steps.shape[1]):
                output, state = wrapper(steps[:, t], state)
                outputs.append(output)
                alignments.append(state.alignments)
            variables = {f"cell/{k}": v for k, v in _variables(cell).items()}
            variables.update({f"mechanism/{k}": v for k, v in _variables(mechanism).items()})
            variables["attention_layer/kernel"] = wrapper._attention_layers[0].kernel.numpy()
            _save(f"wrapper_{cell_type}_output_attention_{str(output_attention).lower()}",
                  {**memory, "steps": steps}, variables,
                  {"outputs": tf.stack(outputs, 1), "alignments": tf.stack(alignments, 1)})


#: The beam-search settings recorded: (α, β) ∈ {0, 0.6} × {0, 0.2}, with every
#: source full length or some padded.
BEAM_SETTINGS = [(alpha, beta, padded) for alpha in (0.0, 0.6) for beta in (0.0, 0.2)
                 for padded in (False, True)]


def beam_search_name(alpha, beta, padded):
    return f"beam_search_a{alpha:g}_b{beta:g}_{'padded' if padded else 'full'}"


def beam_search_fixtures(rng, beam_width=4, vocab=9, max_length=6, batch=9, end_bias=1.5):
    """TF-Addons' `BeamSearchDecoder` with GNMT penalties, one fixture per
    `BEAM_SETTINGS` entry, on one set of weights. `end_bias` is added to the end
    token's logit so that beams finish at different steps within `max_length`,
    where the rankings' rules for finished beams differ."""
    memory = rng.normal(size=(batch, MEMORY_LENGTH, MEMORY_DEPTH)).astype("float32")
    padded_lengths = rng.integers(1, MEMORY_LENGTH, size=batch).astype("int32")
    embedding = rng.normal(scale=1.5, size=(vocab, 4)).astype("float32")
    cell = tf.keras.layers.GRUCell(8)
    mechanism = tfa.seq2seq.BahdanauAttention(6)
    wrapper = tfa.seq2seq.AttentionWrapper(cell, mechanism, attention_layer_size=5)
    output_layer = tf.keras.layers.Dense(vocab)
    start = np.full((batch,), 1, "int32")

    def decode(alpha, beta, lengths):
        mechanism.setup_memory(tfa.seq2seq.tile_batch(memory, beam_width),
                               memory_sequence_length=tfa.seq2seq.tile_batch(lengths,
                                                                             beam_width))
        decoder = tfa.seq2seq.BeamSearchDecoder(
            wrapper, beam_width, output_layer=output_layer, length_penalty_weight=alpha,
            coverage_penalty_weight=beta, maximum_iterations=max_length)
        state = wrapper.get_initial_state(batch_size=batch * beam_width, dtype=tf.float32)
        return decoder(embedding, start_tokens=start, end_token=2, initial_state=state)

    full = np.full((batch,), MEMORY_LENGTH, "int32")
    decode(0.0, 0.0, full)  # creates the variables
    for layer, scale in ((cell, 0.8), (mechanism, 0.8), (wrapper._attention_layers[0], 0.8),
                         (output_layer, 1.5)):
        _randomize(layer, rng, scale)
    output_layer.bias.assign(output_layer.bias + end_bias * tf.one_hot(2, vocab))
    variables = {f"cell/{k}": v for k, v in _variables(cell).items()}
    variables.update({f"mechanism/{k}": v for k, v in _variables(mechanism).items()})
    variables["attention_layer/kernel"] = wrapper._attention_layers[0].kernel.numpy()
    variables.update({f"output/{k}": v for k, v in _variables(output_layer).items()})
    for alpha, beta, padded in BEAM_SETTINGS:
        lengths = padded_lengths if padded else full
        outputs, final_state, sequence_lengths = decode(alpha, beta, lengths)
        finished_at = sequence_lengths.numpy()
        print(f"{beam_search_name(alpha, beta, padded)}: final beams' lengths "
              f"{np.bincount(finished_at.ravel(), minlength=max_length + 1).tolist()} "
              f"(count by length 0..{max_length})")
        _save(beam_search_name(alpha, beta, padded),
              {"memory": memory, "lengths": lengths, "embedding": embedding,
               "beam_width": beam_width, "max_length": max_length, "alpha": alpha,
               "beta": beta},
              variables,
              {"predicted_ids": outputs.predicted_ids,  # (B, T, K), end-token padded
               "scores": outputs.beam_search_decoder_output.scores[:, -1],  # last ranks
               "log_probs": final_state.log_probs,
               "lengths": sequence_lengths})


def guide_program(path=GUIDE):
    """The migration guide's TF-Addons program, as the guide shows it."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = re.search(r'```python title="' + re.escape(PROGRAM_TITLE) + r'"\n(.*?)```',
                      text, re.DOTALL)
    return found.group(1)


def program_fixture():
    """Runs the guide's program here, where it writes `tfa_translator.npz`."""
    program = guide_program()
    tf.keras.utils.set_random_seed(0)
    cwd = os.getcwd()
    os.chdir(HERE)
    try:
        exec(compile(program, GUIDE, "exec"), {})
    finally:
        os.chdir(cwd)
    with open(os.path.join(HERE, "tfa_translator.sha256"), "w") as f:
        f.write(hashlib.sha256(program.encode()).hexdigest() + "\n")
    print(f"wrote {os.path.join(HERE, 'tfa_translator.npz')}")


GROUPS = ("mechanisms", "wrappers", "beam_search", "program")
#: The groups drawn from one random generator in this order: each writes what it
#: always wrote whichever of them are asked for, so the others run unsaved.
SEEDED = (("mechanisms", mechanism_fixtures), ("wrappers", wrapper_fixtures),
          ("beam_search", beam_search_fixtures))
_saving = True


def main():
    global _saving
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("groups", nargs="*", metavar="GROUP",
                        help=f"any of {', '.join(GROUPS)} (all by default)")
    groups = parser.parse_args().groups or GROUPS
    if set(groups) - set(GROUPS):
        parser.error(f"GROUP must be among {GROUPS}; received {groups}")
    if any(name in groups for name, _ in SEEDED):
        tf.keras.utils.set_random_seed(0)
        rng = np.random.default_rng(0)
        for name, record in SEEDED:
            _saving = name in groups
            record(rng)
        _saving = True
    if "program" in groups:
        program_fixture()
    with open(os.path.join(HERE, "VERSIONS"), "w") as f:
        f.write(f"tensorflow {tf.__version__}\ntensorflow-addons {tfa.__version__}\n")


if __name__ == "__main__":
    main()
