"""Every section of `docs/results.md` names the JSON its figures come from, and its
headline figures (the bold ones) are in that JSON, to the precision printed.

A stale or missing result file fails here: a figure on the page that no benchmark
wrote cannot stand.
"""

import json
import math
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "results.md"
JSON_NAME = re.compile(r"([A-Za-z0-9_]+\.json)")
BOLD_NUMBER = re.compile(r"\*\*([−-]?[0-9][0-9,]*(?:\.[0-9]+)?)\s*(%?)\*\*")


def sections():
    text = PAGE.read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    return {part.splitlines()[0].strip(): part for part in parts}


def numbers(value):
    """Every number in a JSON document."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        if math.isfinite(value):
            yield float(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from numbers(item)


def found(figure, percent, values):
    """Whether `figure` (as printed) is one of `values`, or a fraction of one in %."""
    decimals = len(figure.split(".")[1]) if "." in figure else 0
    target = float(figure.replace(",", "").replace("−", "-"))
    scales = (100.0, 1.0) if percent else (1.0, 100.0)
    return any(abs(round(v * scale, decimals) - target) < 0.5 * 10 ** -decimals + 1e-9
               for v in values for scale in scales)


SECTIONS = sections()

def test_the_page_has_sections():
    assert len(SECTIONS) >= 10


@pytest.mark.parametrize("title", sorted(SECTIONS))
def test_each_section_names_its_json_and_holds_its_headline_figures(title):
    body = SECTIONS[title]
    named = sorted({name for name in JSON_NAME.findall(body) if (RESULTS / name).exists()})
    assert named, f"section {title!r} names no JSON file under benchmarks/results/"
    values = [v for name in named
              for v in numbers(json.loads((RESULTS / name).read_text(encoding="utf-8")))]
    missing = [f"{figure}{percent}" for figure, percent in BOLD_NUMBER.findall(body)
               if not found(figure, percent, values)]
    assert missing == [], f"section {title!r}: bold figures in none of {named}: {missing}"
