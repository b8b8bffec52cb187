"""Matplotlib for `predict --plot`: an optional dependency, checked before any work,
with fonts that have the labels' glyphs."""

import functools
import sys

from keras_attn.training.errors import UsageError

INSTALL_HINT = "--plot needs matplotlib: pip install 'keras-attn[plot]'"


def require_matplotlib():
    """Stops with the install hint, before anything is trained or loaded, when
    matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None


@functools.lru_cache(maxsize=None)
def _charmap(path):
    from matplotlib import ft2font

    try:
        return frozenset(ft2font.FT2Font(path).get_charmap())
    except (OSError, RuntimeError, ValueError):
        return frozenset()


def font_families(text):
    """`(families, missing)`: installed font families that together have a glyph for
    every character of `text` (the default family first; matplotlib falls back
    from one to the next glyph by glyph), and the characters none of them has."""
    from matplotlib import font_manager, rcParams

    default = font_manager.findfont(font_manager.FontProperties(family=rcParams["font.family"]))
    needed = {c for c in set(text) if not c.isspace()}
    families, seen = [font_manager.FontProperties(fname=default).get_name()], set()
    needed -= {chr(c) for c in _charmap(default)}
    for entry in font_manager.fontManager.ttflist:
        if not needed:
            break
        # Last Resort maps every code point to a box that names its block: no glyph.
        if entry.name in seen or entry.name in families or "Last Resort" in entry.name:
            continue
        seen.add(entry.name)
        covered = {c for c in needed if ord(c) in _charmap(entry.fname)}
        if covered:
            families.append(entry.name)
            needed -= covered
    return families, "".join(sorted(needed))


def pyplot(labels=""):
    """`matplotlib.pyplot` on the Agg backend, its font families set to cover the
    characters of `labels`; a warning names any character no installed font has
    (it would show as a box)."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families, missing = font_families(labels)
    plt.rcParams["font.family"] = families
    if missing:
        print(f"warning: no installed font has a glyph for {missing!r}; those labels show as "
              "boxes (install a font that covers them, e.g. Debian's fonts-noto-cjk)",
              file=sys.stderr)
    return plt
