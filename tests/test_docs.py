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


def test_every_api_module_has_a_page():
    import pkgutil

    import keras_attn

    pages = {p.read_text(encoding="utf-8").split("::: ")[1].strip()
             for p in (ROOT / "docs" / "api").glob("*.md")}
    modules = {m.name for m in pkgutil.walk_packages(keras_attn.__path__, "keras_attn.")
               if not m.ispkg and not m.name.rsplit(".", 1)[-1].startswith("_")}
    missing = sorted(m for m in modules if m not in pages
                     and not m.startswith(("keras_attn.models", "keras_attn.training")))
    assert not missing, f"modules without an API page in docs/api/: {missing}"
