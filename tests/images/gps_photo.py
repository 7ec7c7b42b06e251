"""A real sample photo with a phone-style EXIF GPS block written into it."""

from __future__ import annotations

import io
from fractions import Fraction
from pathlib import Path

from PIL import Image

from arena.images.location import GPS_IFD


def dms(value: float) -> tuple[Fraction, Fraction, Fraction]:
    value = abs(value)
    degrees = int(value)
    minutes = int((value - degrees) * 60)
    seconds = Fraction(round(((value - degrees) * 60 - minutes) * 60 * 10000), 10000)
    return Fraction(degrees), Fraction(minutes), seconds


def with_gps(photo: Path, lat: float, lon: float) -> bytes:
    """The photo as a JPEG whose EXIF says it was taken at (lat, lon)."""
    with Image.open(photo) as image:
        exif = image.getexif()
        exif[0x010F] = "TestPhone"  # Make
        exif[GPS_IFD] = {
            1: "N" if lat >= 0 else "S",
            2: dms(lat),
            3: "E" if lon >= 0 else "W",
            4: dms(lon),
        }
        out = io.BytesIO()
        image.convert("RGB").save(out, "JPEG", exif=exif.tobytes(), quality=92)
    return out.getvalue()
