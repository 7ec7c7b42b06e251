"""A place-name index built from packages (gazetteer_sources.py), searched with text read off a photo.

`Gazetteer.match(text)` finds place names in a line of text. Scripts written
without spaces (Han, kana, Thai, ...) are searched as substrings; the others
by whole words, so "Rome" never matches inside "Romero". Short single words
and everyday sign words are refused: an OCR line like "PARK" would otherwise
match hundreds of towns.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import pycountry

from arena.geo.scripts import script_of

PlaceKind = Literal["country", "region", "city"]

# Scripts written without spaces between words: searched as substrings.
UNSPACED = frozenset({"Han", "Hiragana", "Katakana", "Hangul", "Thai", "Lao", "Khmer", "Myanmar"})

# Administrative suffixes, so "安顺市" and "安顺" both find Anshun.
_HAN_SUFFIXES = (
    "特别行政区",
    "特別行政區",
    "壮族自治区",
    "回族自治区",
    "维吾尔自治区",
    "自治区",
    "自治區",
    "自治州",
    "地区",
    "省",
    "市",
    "县",
    "縣",
    "区",
    "區",
    "都",
    "道",
    "府",
    "県",
    "州",
)
_HANGUL_SUFFIXES = ("특별자치시", "특별자치도", "특별시", "광역시", "시", "도", "군", "구")
# Everyday words on signs and screens that are also names of some town.
_SIGN_WORDS = frozenset(
    (
        "police",
        "hotel",
        "bank",
        "park",
        "street",
        "road",
        "avenue",
        "center",
        "centre",
        "station",
        "exit",
        "stop",
        "open",
        "sale",
        "city",
        "town",
        "new",
        "north",
        "south",
        "east",
        "west",
        "market",
        "school",
        "way",
        "bar",
        "mobile",
        "reading",
        "bath",
        "nice",
        "split",
        "asia",
        "america",
        "europe",
        "world",
        "royal",
        "grand",
        "central",
        "union",
        "victoria",
        "university",
        "hospital",
        "airport",
        "metro",
        "bus",
        "taxi",
        "parking",
        "toilet",
        "office",
        "post",
        "phone",
        "love",
        "home",
        "house",
        "garden",
        "river",
        "lake",
        "mount",
        "mountain",
        "beach",
        "bay",
        "hill",
        "island",
        "port",
        "lane",
        "plaza",
        "square",
        "tower",
        "bridge",
        "gate",
        "hall",
        "church",
        "temple",
        "palace",
        "store",
        "shop",
        "mall",
        "food",
        "cafe",
        "coffee",
        "restaurant",
        "pizza",
        "burger",
        "welcome",
        "hello",
        "western",
        "eastern",
        "northern",
        "southern",
        "upper",
        "lower",
        "greater",
        "middle",
        "capital",
        "province",
        "state",
        "county",
        "district",
        "region",
        "photo",
        "picture",
        "image",
        "country",
    )
)

WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", re.UNICODE)


@dataclass(frozen=True)
class Place:
    """A country, a first-level region or a city, with a point to show."""

    kind: PlaceKind
    name: str  # English/Latin display name
    country_code: str  # ISO 3166-1 alpha-2
    lat: float | None
    lon: float | None
    population: int = 0
    region: str = ""  # first-level region of a city
    key: str = ""  # GeoNames id, ISO 3166-2 code or alpha-2: unique per place

    @property
    def country_name(self) -> str:
        return country_display_name(self.country_code)

    def label(self) -> str:
        """`Anshun, Guizhou, China` / `Guizhou, China` / `China`."""
        parts = [self.name]
        if fold(self.name) == fold(self.country_name):
            return self.name  # city-states: "Singapore", "Hong Kong"
        if self.kind == "city" and self.region and fold(self.region) not in (fold(self.name), fold(self.country_name)):
            parts.append(self.region)
        if self.kind != "country" and self.country_name != self.name:
            parts.append(self.country_name)
        return ", ".join(parts)


@dataclass(frozen=True)
class Match:
    """A place name found in a piece of text."""

    text: str  # the words as read
    places: tuple[Place, ...]  # every place with that name, most populous first
    quality: float  # 0..1: how unlikely this is a chance hit (length, suffix, words)
    suffixed: bool = False  # the name carried its administrative suffix (市, 省, ...)


@dataclass
class Gazetteer:
    """Folded names -> places, split by how they are searched."""

    spaced: dict[str, list[Place]] = field(default_factory=dict)
    unspaced: dict[str, list[Place]] = field(default_factory=dict)
    countries: dict[str, Place] = field(default_factory=dict)
    regions: dict[str, Place] = field(default_factory=dict)
    max_unspaced_len: int = 1

    def match(self, text: str) -> list[Match]:
        """Place names in `text`, longest first, not overlapping."""
        folded = fold(text)
        matches = self._match_unspaced(folded) + self._match_spaced(folded)
        if len(folded) == len(text):  # show names as they were written, not folded
            matches = [_as_written(m, text, folded) for m in matches]
        return matches

    def country(self, code: str) -> Place | None:
        return self.countries.get(code.upper())

    def names(self) -> Iterator[tuple[str, tuple[Place, ...], float]]:
        """Every name `match` can find, folded (the words of a name in a script written with
        spaces joined by one space), with its places, the most important first, and the quality
        a match of the name alone would have."""
        for phrase, places in self.spaced.items():
            n_words = phrase.count(" ") + 1
            if _acceptable(phrase, n_words, places):
                yield phrase, _ranked(places), _spaced_quality(phrase, n_words)
        for name, places in self.unspaced.items():
            ranked = _ranked(places)
            yield name, ranked, _unspaced_quality(name, _ends_with_suffix(name), ranked)

    # -- searching ---------------------------------------------------------------

    def _match_unspaced(self, folded: str) -> list[Match]:
        matches: list[Match] = []
        i = 0
        while i < len(folded):
            if script_of(folded[i]) not in UNSPACED:
                i += 1
                continue
            hit = None
            for length in range(min(self.max_unspaced_len, len(folded) - i), 1, -1):
                piece = folded[i : i + length]
                if piece in self.unspaced:
                    hit = piece
                    break
            if hit is None:
                i += 1
                continue
            rest = folded[i + len(hit) :]
            suffixed = _ends_with_suffix(hit) or rest.startswith(_HAN_SUFFIXES + _HANGUL_SUFFIXES)
            places = _ranked(self.unspaced[hit])
            matches.append(Match(hit, places, _unspaced_quality(hit, suffixed, places), suffixed))
            i += len(hit)
        return matches

    def _match_spaced(self, folded: str) -> list[Match]:
        words = [w for w in WORD.findall(folded) if not all_unspaced(w)]
        matches: list[Match] = []
        i = 0
        while i < len(words):
            hit = None
            for n in range(min(4, len(words) - i), 0, -1):
                phrase = " ".join(words[i : i + n])
                if phrase in self.spaced and _acceptable(phrase, n, self.spaced[phrase]):
                    hit = (phrase, n)
                    break
            if hit is None:
                i += 1
                continue
            phrase, n = hit
            matches.append(Match(phrase, _ranked(self.spaced[phrase]), _spaced_quality(phrase, n)))
            i += n
        return matches


_LOCK = threading.Lock()
_GAZETTEER: Gazetteer | None = None


def load_gazetteer() -> Gazetteer:
    """The process-wide gazetteer, built on first use (about two seconds)."""
    from arena.geo.gazetteer_sources import build_gazetteer  # it builds this module's classes

    global _GAZETTEER  # a cache, not state: built once, never changed
    with _LOCK:
        if _GAZETTEER is None:
            _GAZETTEER = build_gazetteer()
        return _GAZETTEER


def fold(text: str) -> str:
    """Comparable form: NFKC, case-folded, Latin/Greek/Cyrillic without accents."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold().translate(_FOLDED)


class _FoldedLetters(dict[int, str]):
    """Code point -> its folded letters, filled as letters are met: `str.translate` reads it
    at C speed, where a call a letter took a quarter of a millisecond on 2,000 characters."""

    def __missing__(self, code: int) -> str:
        folded = _fold_letter(chr(code))
        if len(self) < 1 << 16:  # bounded: questions bring letters of their own choosing
            self[code] = folded
        return folded


_FOLDED = _FoldedLetters()


def _fold_letter(ch: str) -> str:
    # Accents go only where they are diacritics: in kana the same marks
    # (dakuten) make different letters.
    if script_of(ch) in ("Latin", "Greek", "Cyrillic"):
        return "".join(c for c in unicodedata.normalize("NFD", ch) if not unicodedata.combining(c))
    return ch


def country_display_name(code: str) -> str:
    country = pycountry.countries.get(alpha_2=code)
    if country is None:
        return code
    return getattr(country, "common_name", None) or country.name


def strip_suffix(key: str) -> str:
    for suffix in _HAN_SUFFIXES + _HANGUL_SUFFIXES:
        if key.endswith(suffix) and len(key) - len(suffix) >= 2:
            return key[: -len(suffix)]
    return key


def _ends_with_suffix(key: str) -> bool:
    return strip_suffix(key) != key


def all_unspaced(text: str) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    return bool(letters) and all(script_of(ch) in UNSPACED for ch in letters)


def _unspaced_quality(hit: str, suffixed: bool, places: tuple[Place, ...]) -> float:
    if suffixed:
        return 0.9
    if len(hit) >= 3:
        return 0.65
    # Two Han characters are often an ordinary word, unless they name a
    # country, a region or one of the biggest cities (北京, 東京, 서울).
    famous = any(p.kind != "city" or p.population >= 5_000_000 for p in places)
    return 0.55 if famous else 0.3


def _spaced_quality(phrase: str, n_words: int) -> float:
    return 0.85 if n_words > 1 else (0.6 if len(phrase) >= 6 else 0.45)


def _acceptable(phrase: str, n_words: int, places: list[Place]) -> bool:
    """Refuse single words that are too short or too common to mean a place."""
    if n_words > 1:
        return True
    if phrase in _SIGN_WORDS or len(phrase) < 4:
        return False
    if len(phrase) == 4:
        # four letters: only well-known places (Rome, Oslo, Lima) or countries
        return any(p.kind != "city" or p.population >= 500_000 for p in places)
    return True


def _as_written(match: Match, text: str, folded: str) -> Match:
    at = folded.find(match.text)
    if at < 0:
        return match
    return Match(text[at : at + len(match.text)], match.places, match.quality, match.suffixed)


def _ranked(places: list[Place]) -> tuple[Place, ...]:
    unique = {p.key: p for p in places}
    order = {"country": 0, "region": 1, "city": 2}
    return tuple(sorted(unique.values(), key=lambda p: (order[p.kind], -p.population)))
