"""Every `>>>` example in a docstring of `keras_attn` and its models, and the Python of the README and of
the documentation site, runs as shown.

A user copies these first, on whichever backend they have, so they are run here
on the test's backend (CI runs this file on TensorFlow and again on JAX). The
examples may use `np`, `keras`, `ops` (`keras.ops`) and `keras_attn` without
importing them, as the docstrings of Keras itself do.
"""

import doctest
import importlib
import importlib.util
import pathlib
import pkgutil
import re
import shutil

import keras
import numpy as np
import pytest

import keras_attn
import keras_attn.models as keras_attn_models


def _docstring_tests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = {}
    # `keras_attn.models` and `keras_attn.training` are `models/` and `training/`
    # installed under the package's name: an editable install does not place them
    # under `keras_attn.__path__`, so each is walked by its own path.
    packages = [(keras_attn.__path__, "keras_attn."),
                (keras_attn_models.__path__, "keras_attn.models.")]
    if importlib.util.find_spec("tensorflow") is not None:
        # The training floor's export modules import TensorFlow: where it is
        # installed (the README's test command), not in CI's JAX-only run.
        import keras_attn.training as keras_attn_training

        packages.append((keras_attn_training.__path__, "keras_attn.training."))
    modules = [info for path, prefix in packages for info in pkgutil.walk_packages(path, prefix)]
    for info in modules:
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as error:
            # The export modules import TensorFlow: skipped where it is not installed.
            if error.name == "tensorflow" and importlib.util.find_spec("tensorflow") is None:
                continue
            raise
        for test in finder.find(module):
            # A class re-exported elsewhere is found once, under its own module.
            if test.examples and test.name.startswith(info.name + "."):
                found.setdefault(test.name, test)
    return [found[name] for name in sorted(found)]


DOCSTRING_TESTS = _docstring_tests()


def test_the_walk_reaches_every_floor():
    walked = {test.name.split(".")[1] for test in DOCSTRING_TESTS}
    assert {"models"} <= walked
    names = {test.name for test in DOCSTRING_TESTS}
    assert "keras_attn.models.translator.preprocessor.TranslatorPreprocessor" in names
    if importlib.util.find_spec("tensorflow") is not None:
        assert "keras_attn.training.errors.UsageError" in names


def test_the_public_layers_have_examples():
    documented = {test.name.rsplit(".", 1)[-1] for test in DOCSTRING_TESTS}
    missing = sorted(
        name
        for name in keras_attn.__all__
        if isinstance(getattr(keras_attn, name), type)
        and issubclass(getattr(keras_attn, name), keras.layers.Layer)
        and name not in documented
    )
    assert not missing, f"public layers without a runnable `>>>` example: {missing}"


@pytest.mark.parametrize("test", DOCSTRING_TESTS, ids=lambda test: test.name)
def test_docstring_example(test):
    test.globs = {"np": np, "keras": keras, "ops": keras.ops, "keras_attn": keras_attn}
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    report = []
    runner.run(test, out=report.append)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted, test.name
    assert not failed, "".join(report)


ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _python_blocks():
    for page in PAGES:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)
        for number, block in enumerate(blocks):
            yield pytest.param(page, block, id=f"{page.relative_to(ROOT)}:{number}")


def test_the_readme_has_python():
    assert re.search(r"```python\n", (ROOT / "README.md").read_text(encoding="utf-8"))


NEEDS_TENSORFLOW = "# Needs TensorFlow"
#: Files a page's blocks read because the page wrote them in a step the suite
#: cannot run (the migration guide's TF-Addons program): recorded copies.
PAGE_FILES = {
    "docs/guides/migration.md": [ROOT / "tests/keras_attn/tfa_parity/tfa_translator.npz"],
}


@pytest.mark.parametrize("page, block", list(_python_blocks()))
def test_the_python_blocks_run(page, block, tmp_path, monkeypatch):
    # A block that exports a SavedModel says so on its first line; it runs wherever
    # TensorFlow is installed (the README's test command), not in CI's JAX-only run.
    if block.startswith(NEEDS_TENSORFLOW) and importlib.util.find_spec("tensorflow") is None:
        pytest.skip("this block writes a SavedModel: it needs TensorFlow")
    # Each block runs in a folder of its own, as a reader's would.
    for source in PAGE_FILES.get(page.relative_to(ROOT).as_posix(), []):
        shutil.copy(source, tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(block, str(page), "exec"), namespace)
    # A block's last line may state its value in a comment.
    last = block.strip().splitlines()[-1]
    if "#" in last:
        expression, expected = last.split("#", 1)
        assert repr(eval(expression, namespace)) == expected.strip(), last
