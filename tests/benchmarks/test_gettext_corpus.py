"""The second-language corpus built from gettext catalogues: what it keeps."""

import json
import os
import struct
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import gettext_corpus  # noqa: E402

HEADER = "Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=2; plural=(n != 1);\n"


def write_mo(path, messages):
    """A compiled catalogue (the GNU `.mo` layout) of `{message: translation}`; a
    tuple message is a plural form (`(singular, plural)` → `[translations]`)."""
    entries = {"": HEADER}
    for message, translation in messages.items():
        if isinstance(message, tuple):
            message, translation = "\0".join(message), "\0".join(translation)
        entries[message] = translation
    keys = sorted(entries)
    originals = [k.encode("utf-8") for k in keys]
    translations = [entries[k].encode("utf-8") for k in keys]
    count, header_size = len(keys), 7 * 4
    strings_at = header_size + 2 * 8 * count
    table, blob = [], b""
    for text in originals + translations:
        table.append((len(text), strings_at + len(blob)))
        blob += text + b"\0"
    with open(path, "wb") as f:
        f.write(struct.pack("<7I", 0x950412DE, 0, count, header_size,
                            header_size + 8 * count, 0, 0))
        for length, offset in table:
            f.write(struct.pack("<2I", length, offset))
        f.write(blob)


def catalogue(root, name, messages, language="xx"):
    folder = root / language / "LC_MESSAGES"
    folder.mkdir(parents=True, exist_ok=True)
    write_mo(folder / f"{name}.mo", messages)


def test_keeps_one_line_translated_messages_of_two_to_thirty_words(tmp_path):
    catalogue(tmp_path, "app", {
        "Open the file": "Открыть файл",
        "menu\x04Save the file": "Сохранить файл",  # the context is dropped
        "Quit": "Выход",  # one word
        "Same words here": "Same words here",  # not translated
        "Two\nlines here": "Две\nстроки",
        " ".join(["word"] * 31): "слово",  # 31 words
        ("%d file was copied", "%d files were copied"): ("%d файл", "%d файла"),
        "Not translated yet": "",
    })
    assert gettext_corpus.catalogue_pairs(tmp_path / "xx" / "LC_MESSAGES" / "app.mo") == {
        "Open the file": "Открыть файл", "Save the file": "Сохранить файл"}


def test_a_message_in_two_catalogues_is_kept_once_from_the_first_by_name(tmp_path):
    catalogue(tmp_path, "b-second", {"Cannot open %s": "второй", "Only here now": "только"})
    catalogue(tmp_path, "a-first", {"Cannot open %s": "первый"})
    lines, counts = gettext_corpus.build(str(tmp_path), "xx")
    assert lines == ["Cannot open %s\tпервый\ta-first", "Only here now\tтолько\tb-second"]
    assert counts == {"a-first": 1, "b-second": 1}


def test_writes_the_corpus_and_a_manifest_with_its_hash(tmp_path):
    catalogue(tmp_path, "app", {"Open the file": "Открыть файл"})
    output, manifest = tmp_path / "xx.tsv", tmp_path / "xx.json"
    gettext_corpus.main(["--language", "xx", "--locale-dir", str(tmp_path),
                         "--output", str(output), "--manifest", str(manifest)])
    assert output.read_text(encoding="utf-8") == "Open the file\tОткрыть файл\tapp\n"
    written = json.loads(manifest.read_text())
    assert written["pairs"] == 1 and written["catalogues"] == {"app": 1}
    assert len(written["sha256"]) == 64


def test_a_language_without_catalogues_is_named_in_the_error(tmp_path):
    with pytest.raises(SystemExit, match="--language 'zz': no catalogues under"):
        gettext_corpus.build(str(tmp_path), "zz")
