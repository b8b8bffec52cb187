import datetime
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from keras_attn.models.text import END_ID, PAD_ID, START_ID, UNK_ID, Vocabulary, encode_batch
from keras_attn.training.tasks.translator import dates
from keras_attn.training.tasks.translator.parallel import (
    load_parallel_tsv,
    normalize_text,
    split_pairs,
)


def test_date_forms_include_the_required_six():
    d = datetime.date(1998, 3, 3)
    written = {f(d) for f in dates.FORMATS.values()}
    for required in ["3 March 1998", "Tuesday, March 3, 1998", "3.3.1998", "March 3rd, 1998",
                     "1998年3月3日", "3 de marzo de 1998"]:
        assert required in written
    assert len(dates.FORMATS) >= 12
    assert dates.FORMATS["us_slash"](d) == "03/03/98"
    assert dates.FORMATS["en_ordinal"](datetime.date(2011, 5, 11)) == "May 11th, 2011"
    assert dates.FORMATS["en_ordinal"](datetime.date(2011, 5, 22)) == "May 22nd, 2011"


def test_corpus_is_deterministic_disjoint_and_in_range():
    a = dates.date_splits(train=3000, validation=300, test=500, seed=7)
    b = dates.date_splits(train=3000, validation=300, test=500, seed=7)
    assert a == b
    sources = [set(s for s, _ in a[name]) for name in ("train", "validation", "test")]
    assert not (sources[0] & sources[1] or sources[0] & sources[2] or sources[1] & sources[2])
    years = [int(t[:4]) for pairs in a.values() for _, t in pairs]
    assert min(years) >= 1950 and max(years) <= 2049
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", t) for pairs in a.values() for _, t in pairs)
    for source, target in a["test"][:200]:  # every source really writes its target's date
        iso = datetime.date.fromisoformat(target)
        assert source in {f(iso) for f in dates.FORMATS.values()}
    assert dates.date_splits(train=100, validation=10, test=10, seed=8) != dates.date_splits(
        train=100, validation=10, test=10, seed=7)


def test_vocabulary_round_trip_unknowns_and_specials(tmp_path):
    vocab = Vocabulary.build(["abc", "cab"], "char")
    assert vocab.tokens[:4] == ["[PAD]", "[UNK]", "[START]", "[END]"]
    assert vocab.encode("abz") == [4, 5, UNK_ID]
    assert vocab.decode([4, 5, END_ID, 6]) == "ab"
    assert vocab.decode([4, UNK_ID]) == "a[UNK]"
    vocab.save(tmp_path / "v.json")
    again = Vocabulary.load(tmp_path / "v.json")
    assert again.tokens == vocab.tokens and again.level == "char"
    ids = encode_batch(vocab, ["abc", ""], 4, add_start_end=True)
    assert ids.tolist() == [[START_ID, 4, 5, END_ID], [START_ID, END_ID, PAD_ID, PAD_ID]]
    words = Vocabulary.build(["a b", "b c"], "word")
    assert words.encode("a c d") == [4, 6, UNK_ID] and words.decode([4, 6]) == "a c"
    with pytest.raises(ValueError, match="`level` must be one of"):
        Vocabulary(["x"], "byte")


def test_tsv_loader_counts_what_it_skips(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text(
        "Go.\tVe.\tCC-BY 2.0 (France) Attribution: tatoeba.org\n"
        "no tab here\n"
        "Hi!\t\n"
        "\n"
        "Run!\t¡Corre!\n"
        "A  very   long sentence indeed.\tUna frase muy larga de verdad.\n"
        "Cafe\u0301\tCafé\n",
        encoding="utf-8",
    )
    pairs, report = load_parallel_tsv(path, max_length=20)
    assert pairs == [("Go.", "Ve."), ("Run!", "¡Corre!"), ("Café", "Café")]
    assert (report.lines, report.malformed, report.empty, report.too_long) == (6, 1, 1, 1)
    assert report.bad_lines == [2]
    assert "3 pairs from 6 lines" in report.summary()
    pairs, _ = load_parallel_tsv(path, reverse=True, lowercase=True, space_punctuation=True, max_pairs=2)
    assert pairs == [("ve .", "go ."), ("¡ corre !", "run !")]
    assert normalize_text("  a\t b ") == "a b"


def test_split_pairs_keeps_sources_in_one_split():
    pairs = [(f"s{i % 50}", f"t{i}") for i in range(200)]
    splits = split_pairs(pairs, seed=1)
    seen = [set(s for s, _ in splits[k]) for k in ("train", "validation", "test")]
    assert sum(len(v) for v in splits.values()) == 200
    assert not (seen[0] & seen[1] or seen[0] & seen[2] or seen[1] & seen[2])


def test_read_utf8_lines_ends_lines_as_text_mode_does_and_names_bad_bytes(tmp_path):
    from keras_attn.training.data import read_utf8_lines

    path = tmp_path / "lines.txt"
    path.write_bytes("a\tb\r\nc\td\re\u00e9\tf\n".encode("utf-8"))
    assert list(read_utf8_lines(path)) == ["a\tb\r\n", "c\td\r", "e\u00e9\tf\n"]
    path.write_bytes(b"ok\tfine\n" + "caf\u00e9\tcoffee\n".encode("cp1252"))
    with pytest.raises(ValueError, match=r"lines.txt:2: not UTF-8 \(byte 0xe9 at column 4\)"):
        load_parallel_tsv(path)


def test_vocabulary_caps_keep_the_most_frequent_tokens():
    texts = ["a a a b b c", "a b d d d d", "e"]
    capped = Vocabulary.build(texts, "word", max_size=6)  # 4 specials + 2
    assert capped.tokens[4:] == ["a", "d"]  # a ×4, d ×4 kept; b ×3, c, e → [UNK]
    assert capped.encode("a b e") == [4, UNK_ID, UNK_ID]
    common = Vocabulary.build(texts, "word", min_count=3)
    assert common.tokens[4:] == ["a", "b", "d"]
    tie = Vocabulary.build(["y x"], "word", max_size=5)
    assert tie.tokens[4:] == ["x"]  # ties broken in code-point order
    with pytest.raises(ValueError, match="`max_size` must be more than the 4 special tokens; received 4"):
        Vocabulary.build(texts, "word", max_size=4)


def test_detokenize_joins_spaced_punctuation_back():
    from keras_attn.models.text import detokenize

    words = {"level": "word", "space_punctuation": True}
    assert detokenize("¿ qué hora es ? son las tres .", words) == "¿qué hora es? son las tres."
    assert detokenize("a , b", {"level": "word", "space_punctuation": False}) == "a , b"
    assert detokenize("a , b", {"level": "char", "space_punctuation": True}) == "a , b"


def test_split_pairs_gives_every_split_a_source_or_says_why_not():
    pairs = [(s, s.upper()) for s in ("a", "b", "c") for _ in range(4)]
    splits = split_pairs(pairs, seed=0)
    assert all(len({s for s, _ in splits[k]}) == 1 for k in ("train", "validation", "test"))
    with pytest.raises(ValueError, match="2 distinct source sentence.*at least 3 are needed"):
        split_pairs([("a", "x"), ("b", "y")] * 6)


@settings(max_examples=150, deadline=None)
@example(text="¿Dónde está la biblioteca? Son las 10:30, ¡ya!")
@given(text=st.text(max_size=40).filter(lambda t: "##" not in t))
def test_subword_text_round_trips_through_tokens(text):
    # The defaults for real text (cased subwords, spaced punctuation): what the
    # translator writes back out reads in as the same tokens, capitals included.
    # ("##" is WordPiece's continuation mark: a word holding it is ambiguous.)
    from keras_attn.models.text import detokenize
    from keras_attn.training.tasks.translator.parallel import normalize_text

    preprocess = {"level": "subword", "space_punctuation": True}
    prepared = normalize_text(text, space_punctuation=True)
    vocab = Vocabulary.build([prepared, "other words . , ?"], "subword", max_size=200)
    ids = vocab.encode(prepared)
    written = detokenize(vocab.decode(ids), preprocess)
    assert "##" not in written and ("[UNK]" in text or "[UNK]" not in written)
    assert vocab.encode(normalize_text(written, space_punctuation=True)) == ids


def test_the_default_subword_vocabulary_shrinks_with_the_corpus():
    from keras_attn.models.translator.preprocessor import vocabulary_size

    assert vocabulary_size(91104) == 8000  # the Spanish corpus's training split
    assert vocabulary_size(6400) == 2133  # its first 8,000 lines
    assert vocabulary_size(30) == 1000
