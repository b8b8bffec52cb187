"""The translator task with `--model transformer`: train, export, serve (TensorFlow only)."""

import json
import os

import numpy as np

from tests.training.serving import TENSORFLOW_BACKEND_ONLY, session_run, tf_only

pytestmark = TENSORFLOW_BACKEND_ONLY


def test_transformer_trains_exports_and_serves_as_keras_decodes(tmp_path):
    from keras_attn.training import cli
    from keras_attn.training.runner import load_run
    from keras_attn.training.tasks.translator.dates import generate_pairs
    from keras_attn.training.tasks.translator.decoding import translate_texts

    work, out = str(tmp_path / "work"), str(tmp_path / "saved_models")
    cli.main(["train", "translator", "--model", "transformer", "--train-size", "1500",
              "--test-size", "100", "--epochs", "1", "--beam-width", "2",
              "--work-dir", work, "--output-dir", out, "--no-tensorboard"])
    export = os.path.join(out, "transformer", "1")
    assert os.path.exists(os.path.join(export, "saved_model.pb"))
    assert not os.path.exists(os.path.join(out, "translator"))
    run, model, assets, _ = load_run(work)
    src, tgt, meta = assets["source_vocab"], assets["target_vocab"], run.settings
    assert meta["model"] == "transformer" and model.name == "transformer"

    texts = [s for s, _ in generate_pairs(50, seed=7)]
    expected = translate_texts(model, src, tgt, meta, texts, beam_width=meta["beam_width"])
    served = tf_only(f"""
        import json
        import tensorflow as tf
        serve = tf.saved_model.load({export!r}).signatures["serving_default"]
        out = serve(text=tf.constant({json.dumps(texts)}))
        print(json.dumps({{
            "translation": [t.decode() for t in out["translation"].numpy()],
            "alignment_shape": out["alignment"].shape.as_list(),
            "finite": bool(tf.reduce_all(tf.math.is_finite(out["alignment"]))),
        }}))
    """, tmp_path)
    got = json.loads(served.strip().splitlines()[-1])
    assert got["translation"] == expected
    assert got["finite"]
    assert got["alignment_shape"] == [50, meta["max_target_length"] - 1, meta["max_source_length"]]

    loaded = session_run(export, {"text": np.array(["3 March 1998", ""])}, tmp_path)
    assert sorted(loaded) == ["alignment", "score", "translation"]
    assert loaded["translation"][1] == ""
