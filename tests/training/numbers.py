"""A parallel corpus written for the tests: digits → English number words."""

import random

ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen").split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def words(n):
    """English words for 0 ≤ n < 1,000,000 (`4321` → `four thousand three hundred twenty-one`)."""
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else "-" + ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + words(rest))
    rest = n % 1000
    return words(n // 1000) + " thousand" + ("" if rest == 0 else " " + words(rest))


def write_numbers_tsv(path, count=2000, seed=0, high=10000, sentences=False):
    """`count` lines `digits<TAB>words<TAB>generated`; with `sentences`, the words
    as a sentence (`Four thousand twenty-one.`), a capital and a full stop."""
    rng = random.Random(seed)
    numbers = rng.sample(range(high), count)
    with open(path, "w", encoding="utf-8") as f:
        for n in numbers:
            text = words(n)
            if sentences:
                text = text[0].upper() + text[1:] + "."
            f.write(f"{n}\t{text}\tgenerated\n")
    return path
