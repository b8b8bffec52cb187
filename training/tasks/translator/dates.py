"""A built-in date-normalisation corpus: human-readable dates → ISO 8601.

Dates between 1950-01-01 and 2049-12-31 are written in `FORMATS` (month and weekday
names from Babel's CLDR data), deterministically from a seed. Splits hold disjoint
*source strings*: no date string appears in two splits.
"""

import datetime
import random

from babel.dates import format_date

FIRST, LAST = datetime.date(1950, 1, 1), datetime.date(2049, 12, 31)


def _ordinal(day):
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _babel(pattern, locale):
    return lambda d: format_date(d, pattern, locale=locale)


# name → writer. Numeric forms state their order: `us_slash` is MM/DD/YY with
# YY 50–99 → 19YY and 00–49 → 20YY; `dotted` is day.month.year.
FORMATS = {
    "en_long": _babel("d MMMM y", "en"),                      # 3 March 1998
    "en_weekday": _babel("EEEE, MMMM d, y", "en"),            # Tuesday, March 3, 1998
    "dotted": lambda d: f"{d.day}.{d.month}.{d.year}",        # 3.3.1998
    "en_ordinal": lambda d: f"{format_date(d, 'MMMM', locale='en')} {_ordinal(d.day)}, {d.year}",
    "zh": _babel("y年M月d日", "zh"),                           # 1998年3月3日
    "es": _babel("d 'de' MMMM 'de' y", "es"),                 # 3 de marzo de 1998
    "us_slash": lambda d: d.strftime("%m/%d/%y"),             # 03/03/98
    # Mar 3 98
    "en_short": lambda d: f"{format_date(d, 'MMM', locale='en')} {d.day} {d.strftime('%y')}",
    # 3-MAR-1998
    "oracle": lambda d: f"{d.day}-{format_date(d, 'MMM', locale='en').upper()}-{d.year}",
    "fr": _babel("d MMMM y", "fr"),                           # 3 mars 1998
    "de": _babel("d. MMMM y", "de"),                          # 3. März 1998
    "en_abbrev_weekday": _babel("EEE d MMM y", "en"),         # Tue 3 Mar 1998
    "ko": _babel("y'년' M'월' d'일'", "ko"),                   # 1998년 3월 3일
    "iso_slash": lambda d: f"{d.year}/{d.month:02d}/{d.day:02d}",  # 1998/03/03
}


def random_date(rng):
    return FIRST + datetime.timedelta(days=rng.randrange((LAST - FIRST).days + 1))


def generate_pairs(count, seed=0, formats=None):
    """`count` distinct `(source, iso)` pairs, formats drawn uniformly."""
    rng = random.Random(seed)
    names = list(formats or FORMATS)
    pairs, seen = [], set()
    while len(pairs) < count:
        date = random_date(rng)
        source = FORMATS[rng.choice(names)](date)
        if source in seen:
            continue
        seen.add(source)
        pairs.append((source, date.isoformat()))
    return pairs


def date_splits(train=20000, validation=1000, test=2000, seed=0):
    """Disjoint train / validation / test lists of `(source, target)` pairs."""
    pairs = generate_pairs(train + validation + test, seed=seed)
    return {
        "train": pairs[:train],
        "validation": pairs[train : train + validation],
        "test": pairs[train + validation :],
    }
