"""Labelled prompts composed in the forms people ask in, in all thirty languages.

A model that learns the surface of its training forms refuses a new form
with confidence. So the corpus holds each form that the arena must take,
and the same forms asked about something other than the photo's place,
composed from blocks written for this project in each language
(`data/forms/<lang>.txt`, `# <block>` headers, one line each):

* choice: a question about the photo's country or city with numbered,
  lettered or slashed options ("Which country? 1. Austria 2. Slovenia",
  "判断属于哪个国家：a.泰国 b.老挝", "Lyon / Marseille / Bordeaux?"); the
  options are CLDR's names of countries and cities in the file's language
  (babel). Refused beside them: the same option lists about a dog's breed or
  a plant, and quizzes with options and no photo in play.
* chain: GeoBrowse's Level-2 shape, the photo's place then two to four facts
  about it; refused beside it: a chain of facts about a named place with no
  photo in play.
* clue: a clue named and no place (writing, kerbs, roofs, plates).
* colloquial: how people type ("ok where is this lol").
* preamble: a long story before the question; refused beside it, the same
  stories before a caption or translation request.
* photo-other and other: requests about the photo that leave its place aside
  (translate, caption, breed, count) and chat (code, jokes), the hard
  negatives.

Every row carries its `form`, so the evaluation can hold a form out whole.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from gatekeeper_build.authored import SEED, sections
from gatekeeper_build.corpus import DATA_DIR, LabelledPrompt

FORMS_DIR = DATA_DIR / "forms"
# The forms the evaluation holds out one at a time (evaluate.by_form), each with both labels.
FORMS = ("choice", "chain", "clue", "colloquial", "preamble", "photo-other")
COUNTRIES = [
    "AT",
    "SI",
    "HR",
    "HU",
    "TH",
    "LA",
    "VN",
    "KH",
    "JP",
    "KR",
    "CN",
    "TW",
    "FR",
    "BE",
    "CH",
    "DE",
    "NL",
    "PL",
    "CZ",
    "SK",
    "PT",
    "ES",
    "IT",
    "GR",
    "TR",
    "GE",
    "AM",
    "IR",
    "PK",
    "IN",
    "BD",
    "LK",
    "NP",
    "MY",
    "ID",
    "PH",
    "AU",
    "NZ",
    "CA",
    "US",
    "MX",
    "GT",
    "CO",
    "PE",
    "CL",
    "AR",
    "BR",
    "UY",
    "MA",
    "DZ",
    "TN",
    "EG",
    "KE",
    "TZ",
    "UG",
    "ET",
    "NG",
    "GH",
    "SN",
    "ZA",
    "NO",
    "SE",
    "FI",
    "DK",
    "IE",
    "GB",
    "RO",
    "BG",
    "RS",
    "UA",
    "RU",
    "KZ",
    "MN",
    "IL",
    "JO",
    "SA",
    "AE",
]
ZONES = [
    "Europe/Paris",
    "Europe/Berlin",
    "Europe/Madrid",
    "Europe/Rome",
    "Europe/Lisbon",
    "Europe/Vienna",
    "Europe/Prague",
    "Europe/Warsaw",
    "Europe/Budapest",
    "Europe/Athens",
    "Europe/Istanbul",
    "Europe/Moscow",
    "Europe/Kiev",
    "Europe/Stockholm",
    "Europe/Oslo",
    "Europe/Dublin",
    "Europe/Amsterdam",
    "Europe/Brussels",
    "Europe/Zurich",
    "Europe/Bucharest",
    "Asia/Tokyo",
    "Asia/Seoul",
    "Asia/Shanghai",
    "Asia/Bangkok",
    "Asia/Jakarta",
    "Asia/Manila",
    "Asia/Kolkata",
    "Asia/Dhaka",
    "Asia/Tehran",
    "Asia/Jerusalem",
    "Asia/Dubai",
    "Asia/Singapore",
    "Asia/Karachi",
    "Asia/Kathmandu",
    "Africa/Cairo",
    "Africa/Nairobi",
    "Africa/Lagos",
    "Africa/Casablanca",
    "Africa/Johannesburg",
    "America/New_York",
    "America/Chicago",
    "America/Mexico_City",
    "America/Bogota",
    "America/Lima",
    "America/Santiago",
    "America/Sao_Paulo",
    "America/Buenos_Aires",
    "America/Toronto",
    "Australia/Sydney",
]
_UNSPACED_LANGS = ("zh", "ja", "th")


def form_rows() -> Iterator[LabelledPrompt]:
    """Every form's rows in every language with a blocks file."""
    for path in sorted(FORMS_DIR.glob("*.txt")):
        yield from _language_rows(path)


def _language_rows(path: Path) -> Iterator[LabelledPrompt]:
    lang, blocks = path.stem, sections(path)
    rng = random.Random(f"{SEED}forms{lang}")
    countries, cities = place_names(lang)
    or_word = blocks["or"][0]

    def row(prompt: str, geographic: bool, form: str, part: str) -> LabelledPrompt:
        return LabelledPrompt(prompt, geographic, lang, f"geoarena-forms:{form}-{part}", form=form)

    asks = [(line, countries) for line in blocks["ask-country"]] + [(line, cities) for line in blocks["ask-city"]]
    for number in range(60):
        stem, names = asks[number % len(asks)]
        yield row(option_list(stem, rng.sample(names, rng.randint(2, 4)), or_word, lang, rng), True, "choice", "place")
    for line in blocks["photo-choice"] + blocks["quiz-choice"]:
        stem, *options = (part.strip() for part in line.split("|"))
        part = "photo" if line in blocks["photo-choice"] else "quiz"
        for _ in range(4):
            picked = rng.sample(options, min(len(options), rng.randint(2, 4)))
            yield row(option_list(stem, picked, or_word, lang, rng), False, "choice", part)
    facts = blocks["chain-facts"]
    for number in range(40):
        start = blocks["chain-start"][number % len(blocks["chain-start"])]
        chain = rng.sample(facts, rng.randint(2, min(4, len(facts))))
        yield row(_joined(lang, [start, *chain]), True, "chain", "place")
    for line in blocks["quiz-chain"]:
        yield row(line, False, "chain", "quiz")
    for line in blocks["clues"]:
        yield row(line, True, "clue", "place")
    for line in blocks["colloquial"]:
        yield row(line, True, "colloquial", "place")
    questions = [line for line, _ in asks] + blocks["clues"]
    others = blocks["photo-other"]
    for preamble in blocks["preambles"]:
        for question in rng.sample(questions, 6):
            yield row(_joined(lang, [preamble, question]), True, "preamble", "place")
        for request in rng.sample(others, min(4, len(others))):
            yield row(_joined(lang, [preamble, request]), False, "preamble", "photo")
    for line in others:
        yield row(line, False, "photo-other", "photo")
    for line in blocks["other"]:
        yield row(line, False, "photo-other", "chat")


def option_list(stem: str, options: list[str], or_word: str, lang: str, rng: random.Random) -> str:
    """A question with its options in one of the ways people write them: numbered, lettered,
    slashed or joined by "or", after the question or before it."""
    gap = "" if lang in _UNSPACED_LANGS else " "
    style = rng.randrange(8)
    if style == 5 and not any(ch.isalpha() for option in options for ch in option):
        style = 4  # numbers alone are no question: the stem stays
    if style == 0:
        return f"{stem}{gap}" + " ".join(f"{i}. {o}" for i, o in enumerate(options, 1))
    if style == 1:
        return stem + "".join(f"\n{i}) {o}" for i, o in enumerate(options, 1))
    if style == 2:
        return f"{stem}{gap}" + " ".join(f"{'abcd'[i]}.{gap}{o}" for i, o in enumerate(options))
    if style == 3:
        return f"{stem}{gap}" + " ".join(f"({'ABCD'[i]}) {o}" for i, o in enumerate(options))
    if style == 4:
        return f"{stem}{gap}" + " / ".join(options)
    if style == 5:
        return " / ".join(options) + "?"
    if style == 6:
        return f"{stem}{gap}" + ", ".join(options[:-1]) + f" {or_word} {options[-1]}?"
    return f"{', '.join(options[:-1])} {or_word} {options[-1]}? {stem}"


def _joined(lang: str, parts: list[str]) -> str:
    return ("" if lang in _UNSPACED_LANGS else " ").join(parts)


def place_names(lang: str) -> tuple[list[str], list[str]]:
    """CLDR's names of COUNTRIES and of the cities of ZONES in `lang` (babel)."""
    try:
        from babel import Locale
        from babel.dates import get_timezone_location
    except ImportError:
        raise SystemExit("build collect needs babel: pip install -e '.[gatekeeper-build]'") from None
    locale = {"tl": "fil"}.get(lang, lang)
    territories = Locale.parse(locale).territories
    countries = [territories[code] for code in COUNTRIES if code in territories]
    cities = sorted({get_timezone_location(zone, locale=locale, return_city=True) for zone in ZONES})
    return countries, cities
