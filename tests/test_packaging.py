"""The distribution claims one import name: `models/` and `training/` install as
`keras_attn.models` and `keras_attn.training`, and the CLI and the library work from
the installed wheel alone."""

import glob
import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _repository_packages():
    """Every package folder of the repository, by its installed name."""
    names = set()
    for top, installed in (("keras_attn", "keras_attn"), ("models", "keras_attn.models"),
                           ("training", "keras_attn.training")):
        for init in glob.glob(os.path.join(ROOT, top, "**", "__init__.py"), recursive=True):
            folder = os.path.relpath(os.path.dirname(init), os.path.join(ROOT, top))
            names.add(installed if folder == "." else f"{installed}.{folder.replace(os.sep, '.')}")
    return names


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel, built from this checkout and installed (without its dependencies,
    which this interpreter has) into a folder of its own."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(root / "dist"), ROOT], check=True, timeout=600,
                   capture_output=True)
    wheel = glob.glob(str(root / "dist" / "*.whl"))[0]
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), wheel], check=True, timeout=600, capture_output=True)
    return {"wheel": wheel, "site": str(target), "cwd": str(root)}


def _run(installed, *command):
    env = {**os.environ, "PYTHONPATH": installed["site"], "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(command, capture_output=True, text=True, env=env,
                          cwd=installed["cwd"], timeout=600)


def test_the_wheel_holds_every_package_folder(installed):
    # setup.py discovers them: a new folder (a task's) needs no list edited.
    with zipfile.ZipFile(installed["wheel"]) as wheel:
        inits = {n[: -len("/__init__.py")].replace("/", ".") for n in wheel.namelist()
                 if n.endswith("/__init__.py")}
    assert inits == _repository_packages()


def test_the_wheel_claims_only_keras_attn(installed):
    with zipfile.ZipFile(installed["wheel"]) as wheel:
        names = wheel.namelist()
        top_level = next(n for n in names if n.endswith("top_level.txt"))
        assert wheel.read(top_level).decode().split() == ["keras_attn"]
    roots = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info",
                                                                           ".data"))}
    assert roots == {"keras_attn"}
    for name in ("models", "training"):
        result = _run(installed, sys.executable, "-c", f"import {name}")
        assert result.returncode != 0 and "No module named" in result.stderr, name


def test_the_installed_library_and_cli_work(installed):
    code = ("import keras_attn, keras_attn.models.translator, keras_attn.training.cli as cli; "
            "print(keras_attn.__file__.startswith(%r), len(keras_attn.registered_layers()))"
            % installed["site"])
    result = _run(installed, sys.executable, "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", str(len(__import__("keras_attn").registered_layers()))]
    script = os.path.join(installed["site"], "bin", "keras-attn")
    result = _run(installed, script, "layers")
    assert result.returncode == 0 and "BahdanauAttention" in result.stdout, result.stderr
