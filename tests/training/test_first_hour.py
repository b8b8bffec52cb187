"""What a new user met in the first hour: export modes, model names, serving
paths, errors, silences and plots (each test failed on the code before the fix)."""

import json
import os
import signal
import stat
import subprocess
import sys

import pytest

from keras_attn.training import cli
from keras_attn.training.errors import UsageError
from keras_attn.training.task import RunMeta
from tests.training.numbers import write_numbers_tsv
from tests.training.serving import TENSORFLOW_BACKEND_ONLY

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(os.path.dirname(sys.executable), "keras-attn")
TINY = ["--train-size", "64", "--test-size", "8", "--epochs", "1", "--embedding-dim", "4",
        "--encoder-units", "4", "--decoder-units", "8", "--attention-units", "4",
        "--no-tensorboard", "--quiet"]


def _keras_attn(*args, cwd, env=None, **kwargs):
    environment = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, cwd=cwd,
                          env={**environment, **(env or {})}, timeout=600, **kwargs)


def _fake_export(root, task, data, settings=None):
    version = root / task / "1"
    (version / "assets.extra").mkdir(parents=True)
    (version / "saved_model.pb").write_bytes(b"")
    RunMeta(task=task, name=task, config={}, settings=settings or {}, data=data).save(
        version / "assets.extra" / "meta.json")
    return version


# 1. Exports readable by another user ---------------------------------------------------
@TENSORFLOW_BACKEND_ONLY
def test_a_published_version_gets_the_modes_of_the_umask(tmp_path):
    from keras_attn.training.export import write_atomically

    def write(folder):
        os.makedirs(os.path.join(folder, "variables"))
        with open(os.path.join(folder, "saved_model.pb"), "w") as f:
            f.write("x")
        with open(os.path.join(folder, "variables", "data"), "w") as f:
            f.write("y")

    old = os.umask(0o022)
    try:
        version = write_atomically(str(tmp_path / "model"), write)
    finally:
        os.umask(old)
    for root, _, files in os.walk(version):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o755, root
        for name in files:
            mode = stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode)
            assert mode == 0o644 and mode & stat.S_IROTH, name


# 2. A model's name, and no publishing over another dataset's model -------------------------
def test_the_model_name_follows_the_data(tmp_path):
    from keras_attn.training import runner, tasks

    parse = cli.build_parser().parse_args
    data = str(write_numbers_tsv(tmp_path / "pairs.tsv", count=50))
    translator, memn2n = tasks.get("translator"), tasks.get("memn2n")
    assert runner.default_name(translator, parse(["train", "translator"])) == "translator"
    assert runner.default_name(translator, parse(["train", "translator", "--data", data])) == \
        "translator-pairs"
    assert runner.default_name(
        translator, parse(["train", "translator", "--model", "transformer", "--data", data])
    ) == "transformer-pairs"
    babi = tmp_path / "babi_en"
    babi.mkdir()
    assert runner.default_name(memn2n, parse(["train", "memn2n", "--data-dir", str(babi)])) == \
        "memn2n-babi_en"
    with pytest.raises(SystemExit) as stopped:
        parse(["train", "translator", "--name", "../x"])
    assert stopped.value.code == 2


def test_training_never_publishes_over_another_datasets_model(tmp_path, capsys):
    exports = tmp_path / "saved_models"
    _fake_export(exports, "translator-pairs", {"source": "file", "path": "/elsewhere/pairs.tsv"})
    data = str(write_numbers_tsv(tmp_path / "pairs.tsv", count=80))
    argv = ["train", "translator", "--data", data, "--level", "char", *TINY,
            "--output-dir", str(exports), "--work-dir", str(tmp_path / "run")]
    with pytest.raises(UsageError, match=r"trained on /elsewhere/pairs.tsv.*give the model its "
                                         r"own --name, or --name translator-pairs"):
        cli.main(argv)
    cli.main([*argv, "--name", "translator-pairs", "--no-export"])
    meta = json.load(open(tmp_path / "run" / "meta.json"))
    assert meta["name"] == "translator-pairs" and meta["data"]["path"] == data
    assert "model 'translator-pairs': run folder" in capsys.readouterr().out


# 3. serving-config writes the paths the server sees ----------------------------------------
@TENSORFLOW_BACKEND_ONLY
def test_serving_config_is_tf_servings_proto_and_every_version_loads(tmp_path):
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    exports = tmp_path / "saved_models"
    cli.main(["train", "translator", *TINY, "--output-dir", str(exports), "--work-dir",
              str(tmp_path / "run")])
    for base, expected in ((None, str(exports / "translator")), ("/models", "/models/translator")):
        cli.main(["serving-config", "--output-dir", str(exports),
                  *(["--base-path", base] if base else [])])
        config = text_format.Parse((exports / "models.config").read_text(),
                                   model_server_config_pb2.ModelServerConfig())
        entries = config.model_config_list.config
        assert [(e.name, e.base_path, e.model_platform) for e in entries] == [
            ("translator", expected, "tensorflow")]
    import tensorflow as tf

    for entry in entries:  # as the container sees /models: the export root here
        local = entry.base_path.replace("/models", str(exports), 1)
        for version in os.listdir(local):
            serve = tf.saved_model.load(os.path.join(local, version)).signatures[
                "serving_default"]
            assert serve(text=tf.constant(["3 March 1998"]))["translation"].shape == (1,)


# 5. Silences, resumes, Ctrl-C ---------------------------------------------------------------
def test_ctrl_c_stops_with_one_line_and_leaves_the_backup(tmp_path):
    process = subprocess.Popen(
        # Many epochs: under load the reader below can lag the run by seconds, and a run
        # that ended before the signal came would exit 0.
        [SCRIPT, "train", "translator", "--train-size", "3000", "--test-size", "8", "--epochs",
         "100", "--no-export", "--no-tensorboard", "--work-dir", str(tmp_path / "run")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={**{k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"},
             "PYTHONUNBUFFERED": "1"})
    for line in process.stdout:
        if line.startswith("Epoch 2/"):  # epoch 1's backup is on disk
            process.send_signal(signal.SIGINT)
            break
    process.stdout.read()
    err = process.stderr.read()
    assert process.wait(timeout=120) == 130
    assert err.strip().splitlines() == [
        f"interrupted: run the same command again to resume from the backup in "
        f"{tmp_path / 'run' / 'backup'}"]
    assert os.listdir(tmp_path / "run" / "backup")


def test_bit_sequence_training_shows_its_progress(tmp_path, capsys):
    cli.main(["train", "ntm-copy", "--memory-size", "8", "--memory-width", "4",
              "--controller-units", "8", "--batch-size", "4", "--sequences", "16",
              "--check-every", "8", "--test-sequences", "2", "--no-export", "--no-jit",
              "--work-dir", str(tmp_path / "run")])  # the progress lines are under test
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("ntm-copy: NTM copy")  # at once, before the first step
    checks = [line for line in out if "validation bit errors" in line and "sequences" in line]
    assert [line.split()[0] for line in checks[:2]] == ["8", "16"]


# 6. Clean one-line errors --------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["train", "translator", "--data", "{tmp}"], "keras-attn: error: --data: '{tmp}' is a "
                                                  "folder; expected a TSV file"),
    (["predict", "{tmp}/nothing", "x"], "argument MODEL_DIR: no such folder: '{tmp}/nothing'"),
    (["predict", "{tmp}", "x"], "argument MODEL_DIR: '{tmp}' is not an export"),
    (["train", "translator", "--epochs", "zero"],
     "keras-attn train translator: error: argument --epochs: must be an integer"),
])
def test_mistakes_stop_with_one_line_and_status_2(tmp_path, argv, message):
    result = _keras_attn(*[a.format(tmp=tmp_path) for a in argv], cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 2 and message.format(tmp=tmp_path) in lines[-1], result.stderr
    assert "Traceback" not in result.stderr


def test_help_shows_every_default():
    text = cli.build_parser()._subparsers._group_actions[0].choices["train"]
    helps = {name: sub.format_help() for name, sub in
             text._subparsers._group_actions[0].choices.items()}
    assert "(default: 64)" in helps["translator"] and "(default: 32)" in helps["memn2n"]
    assert "(default: 128)" in helps["pointer-sort"] and "(default: 8)" in helps["ntm-copy"]


def test_points_of_the_wrong_dimension_are_refused(tmp_path):
    version = _fake_export(tmp_path, "pointer-sort", {"source": "built-in"},
                           {"point_dim": 1, "max_points": 20})
    with pytest.raises(UsageError, match=r"each point \(between ';'\) needs 1 coordinate"):
        cli.main(["predict", str(version), "--points", "0.9 0.1; 0.5 0.3"])


# 8. Quiet start-up -------------------------------------------------------------------------
def test_commands_print_no_tensorflow_start_up_lines(tmp_path):
    result = _keras_attn("layers", cwd=tmp_path)
    assert result.returncode == 0 and "BahdanauAttention" in result.stdout
    assert result.stderr == ""
    # A shell that exports a level (as many TensorFlow users' do) starts quietly too.
    for level in ("0", "1", "2"):
        set_ = _keras_attn("layers", cwd=tmp_path, env={"TF_CPP_MIN_LOG_LEVEL": level})
        assert set_.returncode == 0 and set_.stderr == "", (level, set_.stderr)


# 9. --plot ---------------------------------------------------------------------------------
def test_plot_without_matplotlib_stops_before_loading(tmp_path):
    version = _fake_export(tmp_path, "translator", {"source": "built-in"})
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from keras_attn.training import cli\n"
            f"sys.argv = ['keras-attn', 'predict', {str(version)!r}, 'x', '--plot', 'a.png']\n"
            "sys.exit(cli.run())\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tmp_path, timeout=300)
    # The export's saved_model.pb is empty: loading it would have failed otherwise.
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "keras-attn: error: --plot needs matplotlib: pip install 'keras-attn[plot]'")


def test_plot_labels_fall_back_to_fonts_that_have_their_glyphs(capsys):
    pytest.importorskip("matplotlib")
    from matplotlib import font_manager

    from keras_attn.training import plotting

    families, missing = plotting.font_families("date")
    assert len(families) == 1 and missing == ""
    default = font_manager.findfont(font_manager.FontProperties(family=["sans-serif"]))
    have = set(map(chr, plotting._charmap(default)))
    other = next((e for e in font_manager.fontManager.ttflist
                  if "Last Resort" not in e.name and set(map(chr, plotting._charmap(e.fname)))
                  - have), None)
    if other is None:
        pytest.skip("one font installed")
    extra = sorted(set(map(chr, plotting._charmap(other.fname))) - have)[0]
    families, missing = plotting.font_families("a" + extra)
    assert missing == "" and len(families) == 2
    plotting.pyplot("\U000E01EF\U0010FFFD")  # variation selector, private use: no glyph
    assert "no installed font has a glyph for" in capsys.readouterr().err
