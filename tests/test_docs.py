"""The commands the README and the documentation site show exist, with those flags."""

import pathlib
import re
import shlex

import pytest

from keras_attn.training import cli

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _commands():
    for page in PAGES:
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL):
            for line in block.replace("\\\n", " ").splitlines():
                for command in line.split("  #")[0].split("&&"):
                    command = command.strip()
                    if command.startswith("keras-attn "):
                        yield pytest.param(command,
                                           id=f"{page.relative_to(ROOT)}: {command[:60]}")


COMMANDS = list(_commands())


def test_the_pages_show_commands():
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("line", COMMANDS)
def test_every_shown_command_parses(line):
    argv = shlex.split(line)[1:]
    args = cli.build_parser().parse_args(argv)
    assert args.command in {"train", "evaluate", "export", "predict", "translate",
                            "serving-config", "explore", "layers"}


def _api_pages_hook():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "api_pages", ROOT / "docs" / "_hooks" / "api_pages.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def test_every_api_module_has_a_page():
    """The docs' hook finds every public module as users import it, and gives each
    its own page in the nav."""
    import pkgutil

    import keras_attn

    hook = _api_pages_hook()
    nav = hook.api_nav()
    listed = [name for section in nav for entries in section.values()
              for entry in entries for name in entry]
    pages = [page for section in nav for entries in section.values()
             for entry in entries for page in entry.values()]
    import keras_attn.models
    import keras_attn.training

    # An editable install (CI's) keeps `models/` and `training/` outside
    # `keras_attn.__path__`: each package is walked by its own path.
    packages = [(keras_attn.__path__, "keras_attn."),
                (keras_attn.models.__path__, "keras_attn.models."),
                (keras_attn.training.__path__, "keras_attn.training.")]
    modules = {m.name for path, prefix in packages for m in pkgutil.walk_packages(path, prefix)
               if not m.ispkg and not any(p.startswith("_") for p in m.name.split("."))}
    missing = sorted(modules - set(listed))
    assert not missing, f"modules the API pages' hook does not find: {missing}"
    assert len(pages) == len(set(pages)) == len(listed)
    assert {"keras_attn.training.tasks", "keras_attn.training.tasks.ntm.task",
            "keras_attn.luong", "keras_attn.training.errors",
            "keras_attn.models.translator.preprocessor"} <= set(listed)
    assert {"keras_attn.training.errors", "keras_attn.models.translator.preprocessor",
            "keras_attn.training.tasks.translator.data"} <= modules
