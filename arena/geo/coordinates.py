"""Coordinates written in text, as numbers: `48.8584° N, 2.2945° E`,
`48°51′30″N 2°17′40″E`, `(48.86, 2.29)`, `-33.8568, 151.2153`.

The same forms the style counter counts (GeoArena's GPS feature); here each
is turned into a (lat, lon) pair, in the order they appear.
"""

from __future__ import annotations

import re

from arena.geo.distance import valid_point

_NUM = r"\d{1,3}(?:[.,]\d+)?"
_ANGLE = rf"({_NUM})\s*°?(?:\s*(\d{{1,2}}(?:\.\d+)?)\s*['′’])?(?:\s*(\d{{1,2}}(?:\.\d+)?)\s*(?:\"|″|''|”))?"
HEMISPHERE_PAIR = re.compile(rf"(?<![\w.]){_ANGLE}\s*([NS])\b[\s,;/]*{_ANGLE}\s*([EW])\b", re.IGNORECASE)
BRACKETED_PAIR = re.compile(r"[(\[]\s*([-+−]?\d{1,2}(?:\.\d+)?)\s*,\s*([-+−]?\d{1,3}(?:\.\d+)?)\s*[)\]]")
# (a full stop may end the sentence after a bare pair, but not start another number)
BARE_PAIR = re.compile(r"(?<![\w.])([-+−]?\d{1,2}\.\d{2,})\s*,\s*([-+−]?\d{1,3}\.\d{2,})(?!\w|\.\d)")


def find_coordinates(text: str) -> list[tuple[float, float]]:
    """Every plausible (lat, lon) pair in `text`, in reading order."""
    found: list[tuple[int, tuple[float, float]]] = []
    taken: list[tuple[int, int]] = []
    for m in HEMISPHERE_PAIR.finditer(text):
        lat = _angle(m.group(1), m.group(2), m.group(3)) * (-1 if m.group(4).upper() == "S" else 1)
        lon = _angle(m.group(5), m.group(6), m.group(7)) * (-1 if m.group(8).upper() == "W" else 1)
        taken.append(m.span())
        if valid_point(lat, lon):
            found.append((m.start(), (lat, lon)))
    for pattern in (BRACKETED_PAIR, BARE_PAIR):
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue  # part of a pair already read (a bracketed pair is not read again bare)
            taken.append(m.span())
            lat, lon = _signed(m.group(1)), _signed(m.group(2))
            if valid_point(lat, lon):
                found.append((m.start(), (lat, lon)))
    return [point for _, point in sorted(found)]


def _angle(degrees: str, minutes: str | None, seconds: str | None) -> float:
    value = float(degrees.replace(",", "."))
    if minutes:
        value += float(minutes) / 60
    if seconds:
        value += float(seconds) / 3600
    return value


def _signed(number: str) -> float:
    return float(number.replace("−", "-"))
