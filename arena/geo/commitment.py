"""Where an answer commits to: the point its accuracy is measured from.

The first coordinates it states; else the most specific place it names,
found with the gazetteer (a city over a region over a country), placed at
the gazetteer's point for it. The level says which, so a country-level
answer is never mistaken for a precise one.

Picking among several named places: a place inside a country the answer
also names wins over one that is not (an answer that says "Anshun, Guizhou,
China" commits to Anshun; one that mentions Paris while concluding "Japan"
does not commit to Paris), then the deeper level, then the place named most
often, then the first named. Names in Latin, Greek or Cyrillic letters count
only when capitalised, as place names are in prose ("karst" is no town).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from arena.geo.coordinates import find_coordinates
from arena.geo.distance import great_circle_km
from arena.geo.gazetteer import Gazetteer, Place, load_gazetteer
from arena.geo.reverse import locate
from arena.geo.scripts import script_of

# a bold verdict line, as the baselines write it in any of their languages
_VERDICT = re.compile(
    r"\*\*\s*(?:best guess|最佳猜测|推定|최선의 추측|mi mejor suposición|meilleure hypothèse|beste vermutung"
    r"|лучшее предположение|أفضل تخمين|melhor palpite)\s*[:：]\s*([^*\n]+)\*\*",
    re.IGNORECASE,
)
CommitmentLevel = Literal["coordinates", "city", "region", "country"]
LEVELS: tuple[CommitmentLevel, ...] = ("coordinates", "city", "region", "country")
_DEPTH = {"country": 1, "region": 2, "city": 3}
_CASED_SCRIPTS = frozenset({"Latin", "Greek", "Cyrillic"})


@dataclass(frozen=True)
class Commitment:
    """The point an answer commits to, and how precisely."""

    lat: float
    lon: float
    level: CommitmentLevel
    place: str  # "Anshun, Guizhou, China", or the coordinates as written back
    country_code: str  # ISO 3166-1 alpha-2 of the point

    def error_km(self, lat: float, lon: float) -> float:
        """Great-circle distance from this commitment to a point (a label)."""
        return great_circle_km(self.lat, self.lon, lat, lon)

    def as_json(self) -> dict[str, Any]:
        return {
            "lat": self.lat,
            "lon": self.lon,
            "level": self.level,
            "place": self.place,
            "country": self.country_code,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Commitment | None:
        if not data or data.get("level") not in LEVELS:
            return None
        return cls(
            float(data["lat"]),
            float(data["lon"]),
            data["level"],
            str(data.get("place", "")),
            str(data.get("country", "")),
        )


def answer_commitment(text: str, gazetteer: Gazetteer | None = None) -> Commitment | None:
    """Where `text` commits to, or None when it names no place at all."""
    points = find_coordinates(text)
    if points:
        lat, lon = points[0]
        return Commitment(lat, lon, "coordinates", f"{lat:.4f}, {lon:.4f}", locate(lat, lon).country_code)
    gazetteer = gazetteer or load_gazetteer()
    # A stated verdict ("**Best guess: somewhere in China.**") is the commitment, whatever else
    # the answer goes on to name as alternatives (a city-state among them would outrank a country).
    verdict = _VERDICT.search(text)
    place = most_specific_place(verdict.group(1), gazetteer) if verdict else None
    if place is None:
        place = most_specific_place(text, gazetteer)
    if place is None or place.lat is None or place.lon is None:
        return None
    return Commitment(place.lat, place.lon, place.kind, place.label(), place.country_code)


def most_specific_place(text: str, gazetteer: Gazetteer) -> Place | None:
    mentions = [m for m in gazetteer.match(text) if _reads_as_name(m.text)]
    if not mentions:
        return None
    named_countries = {p.country_code for m in mentions for p in m.places if p.kind == "country"}
    times_named: dict[str, int] = {}
    first_named: dict[str, int] = {}
    for order, m in enumerate(mentions):
        for p in m.places:
            times_named[p.key] = times_named.get(p.key, 0) + 1
            first_named.setdefault(p.key, order)
    best: tuple[tuple[int, int, int, int, int], Place] | None = None
    for m in mentions:
        for rank, p in enumerate(m.places):
            if p.lat is None or p.lon is None:
                continue
            inside_named = not named_countries or p.country_code in named_countries
            # earlier entries of a name are the more populous places of that name
            key = (int(inside_named), _DEPTH[p.kind], times_named[p.key], -first_named[p.key], -rank)
            if best is None or key > best[0]:
                best = (key, p)
    return best[1] if best else None


def _reads_as_name(text: str) -> bool:
    first = next((ch for ch in text if ch.isalpha()), "")
    return bool(first) and (script_of(first) not in _CASED_SCRIPTS or first.isupper())
