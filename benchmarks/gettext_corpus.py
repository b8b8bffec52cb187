"""A parallel corpus in another language and script from the machine's own software:
the English messages of the installed programs' gettext catalogues and their
translations, one `english<TAB>translation<TAB>catalogue` line a pair, as the
tutorial's `spa.txt` has them.

    python benchmarks/gettext_corpus.py --language ru --output ru.tsv \
        [--manifest benchmarks/results/gettext_corpus_ru.json]

Nothing is downloaded: a Debian or Ubuntu machine keeps the compiled catalogues of
its packages under `/usr/share/locale/LANG/LC_MESSAGES/*.mo` (`--locale-dir`). Each
catalogue is its package's, under that package's licence (mostly the GNU GPL or LGPL);
the corpus is built for a benchmark and never shipped with this project. Which
catalogues a machine has depends on its packages, so the manifest lists them with
their counts and the file's SHA-256.

Kept: one-line messages of 2 to 30 words with a translation that differs from the
English; the message context (`msgctxt`) is dropped and plural forms are left out.
An English message in several catalogues is kept once, from the first catalogue in
name order. Software messages are short and repeat themselves (`cannot open %s`,
`cannot open '%s'`), so a held-out pair often has a near twin in training: the
corpus measures one setting against another, not translation of prose.
"""

import argparse
import gettext
import glob
import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from results_io import machine, write_results  # noqa: E402

MIN_WORDS, MAX_WORDS = 2, 30


def catalogue_pairs(path):
    """`{english: translation}` of one compiled catalogue: its one-line singular
    messages, without their context."""
    with open(path, "rb") as f:
        catalog = gettext.GNUTranslations(f)._catalog  # gettext lists messages nowhere else
    pairs = {}
    for message, translation in catalog.items():
        if not isinstance(message, str) or not message or not isinstance(translation, str):
            continue  # plural forms are keyed by (message, n); the header by ""
        english = message.rpartition("\x04")[2].strip()  # "context\x04message"
        translation = translation.strip()
        if "\n" in english or "\n" in translation or "\t" in english + translation:
            continue
        if not MIN_WORDS <= len(english.split()) <= MAX_WORDS:
            continue
        if translation and translation != english:
            pairs[english] = translation
    return pairs


def build(locale_dir, language):
    """The pairs in catalogue-name order, each English message once, and how many each
    catalogue gave."""
    paths = sorted(glob.glob(os.path.join(locale_dir, language, "LC_MESSAGES", "*.mo")))
    if not paths:
        raise SystemExit(f"--language {language!r}: no catalogues under "
                         f"{os.path.join(locale_dir, language, 'LC_MESSAGES')}")
    seen, lines, counts = set(), [], {}
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        try:
            pairs = catalogue_pairs(path)
        except (OSError, UnicodeDecodeError, ValueError) as error:  # damaged: say so, go on
            print(f"skipped {path}: {error}")
            continue
        kept = 0
        for english in sorted(pairs):
            if english not in seen:
                seen.add(english)
                lines.append(f"{english}\t{pairs[english]}\t{name}")
                kept += 1
        counts[name] = kept
    return lines, counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--language", required=True, help="a locale folder name: ru, el, ja …")
    parser.add_argument("--locale-dir", default="/usr/share/locale")
    parser.add_argument("--output", required=True, help="the corpus file to write (TSV)")
    parser.add_argument("--manifest", help="JSON: the catalogues, counts and the file's hash")
    args = parser.parse_args(argv)
    lines, counts = build(args.locale_dir, args.language)
    text = "\n".join(lines) + "\n"
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{len(lines):,} pairs from {len(counts)} catalogues → {args.output}")
    if args.manifest:
        write_results({
            "benchmark": "gettext_corpus", "language": args.language,
            "command": " ".join(["python", "benchmarks/gettext_corpus.py",
                                 *(argv if argv is not None else sys.argv[1:])]),
            "locale_dir": args.locale_dir, "pairs": len(lines),
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "machine": machine(), "catalogues": counts}, args.manifest)
    return lines


if __name__ == "__main__":
    main()
