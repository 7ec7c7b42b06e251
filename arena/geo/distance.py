"""Great-circle distance between two points on the Earth (haversine)."""

from __future__ import annotations

import math

# Mean Earth radius (IUGG R1); a sphere errs by at most ~0.5% against the ellipsoid.
EARTH_RADIUS_KM = 6371.0088


def great_circle_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Distance along the surface in km; haversine stays accurate for tiny distances
    and (with the clamp) for antipodal ones."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dlat = p2 - p1
    dlon = math.radians(lon2 - lon1)
    h = math.sin(dlat / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dlon / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(min(1.0, h)))


def valid_point(lat: float, lon: float) -> bool:
    return math.isfinite(lat) and math.isfinite(lon) and -90 <= lat <= 90 and -180 <= lon <= 180
