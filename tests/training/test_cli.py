import json
import os
import subprocess
import sys

import pytest

import keras_attn
from keras_attn.training import cli
from keras_attn.training.errors import UsageError


def _run(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, "-m", "keras_attn.training.cli", *args],
        capture_output=True, text=True, env=env, timeout=300,
    )


def test_version():
    result = _run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"keras-attn {keras_attn.__version__}"


def test_layers_lists_every_registered_layer_with_its_summary(capsys):
    assert cli.main(["layers"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    registered = keras_attn.registered_layers()
    assert len(lines) == len(registered) >= 15
    names = [line.split()[0] for line in lines]
    assert names == list(registered)
    bahdanau = next(line for line in lines if line.startswith("BahdanauAttention"))
    assert "Additive attention of Bahdanau" in bahdanau
    assert all(len(line.split(None, 1)) == 2 for line in lines), "a layer lacks a summary"


def test_console_script_is_installed():
    import shutil

    script = shutil.which("keras-attn") or os.path.join(os.path.dirname(sys.executable), "keras-attn")
    assert os.path.exists(script), "pip install did not create the keras-attn script"
    result = subprocess.run([script, "layers"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "MultiHeadAttention" in result.stdout


def test_backend_is_taken_before_the_command_or_after_the_task():
    parser = cli.build_parser()
    assert parser.parse_args(["--backend", "jax", "train", "dnc-copy"]).backend == "jax"
    assert parser.parse_args(["train", "dnc-copy", "--backend", "jax"]).backend == "jax"
    evaluate = ["evaluate", "dnc-copy", "--run-dir", "runs/dnc-copy", "--backend", "jax"]
    assert parser.parse_args(evaluate).backend == "jax"
    assert parser.parse_args(["train", "ntm-copy"]).backend is None
    with_both = ["--backend", "tensorflow", "train", "ntm-copy", "--backend", "jax"]
    assert parser.parse_args(with_both).backend == "jax"  # the nearer one wins


@pytest.mark.parametrize("launcher", ["script", "module"])
def test_backend_flag_applies_before_keras_starts(tmp_path, launcher):
    """Keras picks its backend once, at import: the `keras-attn` script sets it from
    `--backend` before importing anything, and `python -m` starts again with it."""
    script = os.path.join(os.path.dirname(sys.executable), "keras-attn")
    start = [script] if launcher == "script" else [sys.executable, "-m", "keras_attn.training.cli"]
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    # The smallest memory network: what it checks is where the backend came from (the
    # translator's JAX decoding, which compiles for minutes, is test_train_cli's).
    result = subprocess.run(
        [*start, "train", "memn2n", "--kinds", "1", "--train-questions", "64",
         "--test-questions", "8", "--epochs", "1", "--embedding-dim", "4", "--hops", "1",
         "--memory-size", "10", "--no-export", "--work-dir", str(tmp_path / "run"),
         "--backend", "jax"],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["training"]["backend"] == "jax"


def test_a_backend_other_than_the_running_one_is_refused_in_process(capsys):
    import keras

    other = "jax" if keras.backend.backend() != "jax" else "tensorflow"
    with pytest.raises(UsageError, match=f"--backend {other}: Keras already runs on"):
        cli.main(["--backend", other, "layers"])


def test_unset_jit_is_the_task_default_on_each_backend(monkeypatch):
    import keras

    from keras_attn.training import runner, tasks

    memn2n, translator = tasks.get("memn2n"), tasks.get("translator")
    assert runner.resolve_jit(memn2n, True) is True and runner.resolve_jit(memn2n, False) is False
    assert runner.resolve_jit(memn2n, None) is (keras.backend.backend() != "torch")
    monkeypatch.setattr(keras.backend, "backend", lambda: "torch")
    assert runner.resolve_jit(memn2n, None) is False and runner.resolve_jit(memn2n, True) is True
    # The translator's measured exception: its decoder loop is faster without XLA on TF.
    assert [translator.jit_default(b) for b in ("tensorflow", "jax", "torch")] == [
        False, True, False]
    parser = cli.build_parser()
    for task in ("ntm-copy", "dnc-copy", "pointer-sort", "memn2n", "translator"):
        assert parser.parse_args(["train", task]).jit is None
        assert parser.parse_args(["train", task, "--no-jit"]).jit is False


def test_translator_flag_offers_every_attention_the_model_builds():
    from keras_attn.models import translator

    parser = cli.build_parser()
    train = next(a for a in parser._subparsers._group_actions[0].choices["train"]._actions
                 if a.dest == "task")
    offered = next(a for a in train.choices["translator"]._actions if a.dest == "attention")
    for kind in offered.choices:
        assert parser.parse_args(["train", "translator", "--attention", kind]).attention == kind
        model = translator.Translator(20, 12, attention=kind, decoder_units=128,
                                      encoder_units=64)
        assert model.get_layer("decoder").attention_kind == kind
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "translator", "--attention", "luong-cosine"])


@pytest.mark.parametrize("argv, message", [
    (["evaluate", "translator", "--run-dir", "{tmp}"],
     "argument --run-dir: '{tmp}' holds no meta.json"),
    (["export", "ntm-copy", "--run-dir", "{tmp}/missing"],
     "argument --run-dir: '{tmp}/missing' holds no meta.json"),
    (["train", "translator", "--data", "{tmp}/pairs.tsv"],
     "argument --data: no such file or folder: '{tmp}/pairs.tsv'"),
])
def test_missing_paths_stop_with_one_line(tmp_path, capsys, argv, message):
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == 2
    assert message.format(tmp=tmp_path) in capsys.readouterr().err


def test_a_data_file_that_is_not_utf8_stops_with_its_line(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_bytes("caf\u00e9\tcoffee\n".encode("latin-1"))
    with pytest.raises(UsageError, match=r"pairs.tsv:1: not UTF-8 \(byte 0xe9 at column 4\)"):
        cli.main(["train", "translator", "--data", str(path), "--no-export",
                  "--work-dir", str(tmp_path / "w")])


@pytest.mark.parametrize("flags, message", [
    (["--model", "transformer", "--model-dim", "30", "--num-heads", "4"],
     r"translator: `model_dim` must be divisible by `num_heads`; received model_dim=30 and num_heads=4"),
    (["--attention", "luong-dot", "--encoder-units", "8", "--decoder-units", "8"],
     r"translator: `luong-dot` scores .* `decoder_units` must equal 2 × `encoder_units`"),
])
def test_model_sizes_that_do_not_fit_stop_with_one_line(tmp_path, flags, message):
    with pytest.raises(UsageError, match=message):
        cli.main(["train", "translator", "--train-size", "50", "--test-size", "10", "--no-export",
                  "--work-dir", str(tmp_path / "w"), *flags])


def test_dropout_flag_is_a_probability(capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["train", "translator", "--model", "transformer", "--dropout", "1.5"])
    assert stopped.value.code == 2
    assert "argument --dropout: must be a number in [0, 1); received 1.5" in capsys.readouterr().err


def _resolved_translator_args(argv):
    return cli.task_options(argv)


def test_transformer_cosine_schedule_warms_up_then_decays_to_zero():
    from keras import ops

    from keras_attn.training.tasks.translator.modeling import learning_rate

    parse = _resolved_translator_args
    base = ["train", "translator", "--epochs", "2", "--batch-size", "10"]
    assert learning_rate(parse(base), 10) == 3e-3  # the RNN's constant rate
    cosine = [*base, "--model", "transformer", "--schedule", "cosine"]
    schedule = learning_rate(parse([*cosine, "--warmup-steps", "5"]), 10)
    rates = [float(ops.convert_to_numpy(schedule(step))) for step in (0, 5, 12, 20)]
    # 10 steps an epoch, 20 in all; peak after 5, zero at 20.
    assert rates[0] == 0.0 and rates[1] == pytest.approx(3e-3)
    assert 0 < rates[2] < 3e-3 and rates[3] == pytest.approx(0.0, abs=1e-9)
    short = learning_rate(parse([*cosine, "--warmup-steps", "500"]), 2)
    # 4 steps in all: the warm-up is cut to 3, so the cosine still ends at zero on step 4.
    short_rates = [float(ops.convert_to_numpy(short(step))) for step in (0, 3, 4)]
    assert short_rates[0] == 0.0 and short_rates[1] == pytest.approx(3e-3)
    assert short_rates[2] == pytest.approx(0.0, abs=1e-9)


def test_transformer_default_schedule_is_the_inverse_square_root_of_the_step():
    from keras import ops

    from keras_attn.models.schedules import InverseSquareRootDecay
    from keras_attn.training.tasks.translator.modeling import learning_rate

    parse = _resolved_translator_args
    base = ["train", "translator", "--model", "transformer", "--learning-rate", "2e-3"]
    schedule = learning_rate(parse([*base, "--warmup-steps", "10"]), 95)
    assert isinstance(schedule, InverseSquareRootDecay)
    rates = [float(ops.convert_to_numpy(schedule(step))) for step in (4, 9, 39)]
    assert rates == pytest.approx([1e-3, 2e-3, 1e-3])  # half-way up, the peak, √(10/40)
    no_warmup = learning_rate(parse([*base, "--warmup-steps", "0"]), 95)
    assert float(ops.convert_to_numpy(no_warmup(0))) == pytest.approx(2e-3)
    assert learning_rate(parse([*base, "--schedule", "constant"]), 95) == 2e-3
