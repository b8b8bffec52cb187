"""How the `.keras` files beside this script were written (kept as the record).

They are small models saved by the code of commit 6c9c67a, the last whose models
were built from `*Config` dataclasses by `build_*` functions (so their saved class
is a plain `Functional`). `tests/models/test_landed_files.py` checks that the
current code still loads each one and that it answers as it did then. This script
uses that commit's API, so it runs with that commit's code on the path:

    git worktree add /tmp/landed 6c9c67a
    ln -s ../models /tmp/landed/keras_attn/models       # installed names of models/
    ln -s ../training /tmp/landed/keras_attn/training   # and training/
    PYTHONPATH=/tmp/landed python tests/models/landed/written_by.py tests/models/landed
"""

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_attn.models import dnc, memn2n, ntm, pointer_net, transformer, translator  # noqa: E402


def models_and_inputs(rng):
    """`{name: (model, inputs)}`: every model of the zoo, small, with a batch for it."""
    source = rng.integers(4, 12, (2, 5)).astype("int32")
    target_in = rng.integers(4, 10, (2, 4)).astype("int32")
    points = rng.random((2, 5, 2)).astype("float32")
    bits = (rng.random((2, 6, 9)) > 0.5).astype("float32")
    return {
        "translator": (
            translator.build_translator(translator.TranslatorConfig(
                12, 10, 5, 6, attention="luong-general", rnn="lstm", embedding_dim=8,
                encoder_units=8, decoder_units=16, attention_units=16,
                attention_layer_size=16)),
            {"source": source, "target_in": target_in}),
        "transformer": (
            transformer.build_transformer(transformer.TransformerConfig(
                12, 10, 5, 6, model_dim=16, num_heads=2, feedforward_dim=32,
                rope_max_wavelength=100.0)),
            {"source": source, "target_in": target_in}),
        "pointer_net": (
            pointer_net.build_pointer_net(pointer_net.PointerNetConfig(
                units=16, encoder_layers=1, heads=2, start_index=0)),
            {"points": points, "lengths": np.array([5, 3], "int32"),
             "decoder_tokens": rng.integers(0, 6, (2, 5)).astype("int32")}),
        "memn2n": (
            memn2n.build_memn2n(memn2n.MemN2NConfig(
                vocab_size=15, answer_ids=[3, 4, 7], memory_size=6, sentence_length=4,
                question_length=3, embedding_dim=8)),
            {"story": rng.integers(0, 15, (2, 6, 4)).astype("int32"),
             "question": rng.integers(1, 15, (2, 3)).astype("int32")}),
        "ntm": (
            ntm.build_ntm(ntm.NTMConfig(memory_size=8, memory_width=6, controller_units=16)),
            bits),
        "dnc": (
            dnc.build_dnc(dnc.DNCConfig(memory_size=8, memory_width=6, controller_units=16)),
            bits),
        "dnc_qa": (
            dnc.build_dnc_qa(dnc.DNCQAConfig(vocab_size=11, memory_size=8, memory_width=6,
                                             read_heads=2, controller_units=16)),
            {"words": rng.integers(1, 11, (2, 7)).astype("int32"),
             "answer_step": np.array([6, 4], "int32")}),
    }


def main(output_dir):
    keras.utils.set_random_seed(0)
    os.makedirs(output_dir, exist_ok=True)
    for name, (model, inputs) in models_and_inputs(np.random.default_rng(0)).items():
        outputs = np.asarray(model(inputs, training=False))
        model.save(os.path.join(output_dir, f"{name}.keras"))
        flat = inputs if isinstance(inputs, dict) else {"sequence": inputs}
        np.savez(os.path.join(output_dir, f"{name}.npz"), outputs=outputs,
                 **{f"input_{key}": value for key, value in flat.items()})
        print(name, outputs.shape)


if __name__ == "__main__":
    main(sys.argv[1])
