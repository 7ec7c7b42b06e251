"""The uploader's opt-in location label of a battle: from the form to its row.

With `share_location=true` the label comes from the photo's EXIF GPS, else
from a pin (`location="lat,lon"`), else from a typed place name resolved with
the gazetteer. Without the opt-in nothing is kept, whatever else was sent.
Points are rounded to a grid of `precision_km` before they are stored; a
place is only as precise as its kind (a country is not a point).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.orm import Session

from arena.db.tables import BattleLabel
from arena.errors import ClientError
from arena.geo.commitment import most_specific_place
from arena.geo.distance import valid_point
from arena.geo.gazetteer import load_gazetteer
from arena.geo.reverse import locate

KM_PER_DEGREE = 111.195  # of latitude (and of longitude on the equator)
# How far a named place's point can be from where a photo of it was taken.
PLACE_PRECISION_KM = {"city": 25.0, "region": 200.0, "country": 750.0}
MAX_PLACE_CHARS = 200
_LOCATION = re.compile(r"^\s*([-+]?\d{1,3}(?:\.\d+)?)\s*,\s*([-+]?\d{1,3}(?:\.\d+)?)\s*$")
_YES = {"true", "1", "on", "yes"}


@dataclass(frozen=True)
class Label:
    lat: float
    lon: float
    precision_km: float
    source: str  # exif | pin | place
    country: str
    continent: str


def label_from_form(
    *, share: object, location: object, place: object, exif_gps: tuple[float, float] | None, precision_km: float
) -> Label | None:
    """The label to keep, or None without the opt-in; 422 for a location or place we cannot read."""
    if not isinstance(share, str) or share.strip().lower() not in _YES:
        return None
    if exif_gps is not None:
        return _point_label(*exif_gps, "exif", precision_km)
    if isinstance(location, str) and location.strip():
        match = _LOCATION.match(location)
        point = (float(match.group(1)), float(match.group(2))) if match else None
        if point is None or not valid_point(*point):
            raise ClientError(
                422,
                "bad_location",
                'The location must be "latitude,longitude" in degrees, e.g. "26.25,105.93" '
                "(latitude -90 to 90, longitude -180 to 180).",
            )
        return _point_label(*point, "pin", precision_km)
    if isinstance(place, str) and place.strip():
        if len(place) > MAX_PLACE_CHARS:
            raise ClientError(422, "bad_place", f"The place name is longer than {MAX_PLACE_CHARS} characters.")
        found = most_specific_place(place, load_gazetteer())
        if found is None or found.lat is None or found.lon is None:
            raise ClientError(
                422,
                "unknown_place",
                "We could not find that place; try a city, region or country name, or place a pin on the map.",
            )
        where = locate(found.lat, found.lon)
        return Label(
            *_rounded(found.lat, found.lon, precision_km),
            precision_km=max(precision_km, PLACE_PRECISION_KM[found.kind]),
            source="place",
            country=found.country_code,
            continent=where.continent_code,
        )
    raise ClientError(
        422,
        "missing_location",
        "You chose to share the photo's location, but it has no GPS position: "
        "place a pin on the map or type the place's name.",
    )


def save_label(session: Session, battle_id: str, label: Label) -> None:
    session.add(
        BattleLabel(
            battle_id=battle_id,
            lat=label.lat,
            lon=label.lon,
            precision_km=label.precision_km,
            source=label.source,
            country=label.country,
            continent=label.continent,
        )
    )


def delete_label(session: Session, battle_id: str) -> bool:
    """Forget a battle's label; True when there was one."""
    result = session.execute(delete(BattleLabel).where(BattleLabel.battle_id == battle_id))
    return bool(result.rowcount)  # type: ignore[attr-defined]


def _point_label(lat: float, lon: float, source: str, precision_km: float) -> Label:
    lat, lon = _rounded(lat, lon, precision_km)
    where = locate(lat, lon)
    return Label(lat, lon, precision_km, source, where.country_code, where.continent_code)


def _rounded(lat: float, lon: float, precision_km: float) -> tuple[float, float]:
    """Snap to a grid of `precision_km` (in degrees of latitude; longitude on the
    same step is never coarser than that)."""
    step = precision_km / KM_PER_DEGREE
    digits = max(0, 1 - math.floor(math.log10(step)))  # no float noise in the stored value
    snap_lat = round(round(lat / step) * step, digits)
    snap_lon = round(round(lon / step) * step, digits)
    return max(-90.0, min(90.0, snap_lat)), max(-180.0, min(180.0, snap_lon))
