"""The GPS position in a photo's EXIF, read before intake strips it.

Intake hands it to the caller only: the stored image never carries it, and
the caller keeps it only when the uploader opted in (a private label).
"""

from __future__ import annotations

import math
from typing import Any

from PIL import Image

GPS_IFD = 0x8825
_LAT_REF, _LAT, _LON_REF, _LON = 1, 2, 3, 4


def exif_gps(image: Image.Image) -> tuple[float, float] | None:
    """(lat, lon) in decimal degrees, or None when absent, damaged or (0, 0)
    (what some phones write when they had no fix)."""
    try:
        gps = image.getexif().get_ifd(GPS_IFD)
        lat = _degrees(gps.get(_LAT), gps.get(_LAT_REF), "S")
        lon = _degrees(gps.get(_LON), gps.get(_LON_REF), "W")
    except Exception:  # noqa: BLE001 - EXIF is untrusted bytes: any damage means "no position"
        return None
    if lat is None or lon is None or not (-90 <= lat <= 90 and -180 <= lon <= 180) or (lat == 0 and lon == 0):
        return None
    return lat, lon


def _degrees(value: Any, ref: Any, negative: str) -> float | None:
    if value is None:
        return None
    parts = [float(v) for v in (value if isinstance(value, tuple | list) else (value,))]
    if not parts or len(parts) > 3 or not all(math.isfinite(p) and p >= 0 for p in parts):
        return None
    degrees = sum(p / 60.0**i for i, p in enumerate(parts))
    if isinstance(ref, bytes):
        ref = ref.decode("ascii", "replace")
    value = float(degrees)
    south_or_west: bool = str(ref or "").strip().upper().startswith(negative)
    return float(-value if south_or_west else value)
