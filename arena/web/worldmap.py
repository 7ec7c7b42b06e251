"""The world map as inline SVG, drawn on the server from shipped outlines.

Equirectangular: x = longitude, y = -latitude, in degrees, so the page's
script turns a click into a point with the SVG's own transform and nothing
else (no tiles, no map library, no CDN). Antarctica is left out: no photo
label needs it on a leaderboard, and it would take a third of the height.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from html import escape

from arena.geo.world import CountryShape, world_countries

NORTH, SOUTH = 84.0, -58.0
VIEWBOX = f"-180 {-NORTH:g} 360 {NORTH - SOUTH:g}"
# Sequential blues (ColorBrewer Blues 5), light to dark; no battles: grey.
SHADES = ("#c6dbef", "#9ecae1", "#6baed6", "#3182bd", "#08519c")
EMPTY = "#e5e5e5"


def world_map_svg(counts: Mapping[str, int] | None = None, *, label: str, element_id: str = "") -> str:
    """Countries shaded by `counts` (alpha-2 -> labelled battles), each with a <title>."""
    counts = counts or {}
    top = max(counts.values(), default=0)
    paths = []
    for shape, d in _country_paths():
        n = counts.get(shape.code, 0)
        title = f"{shape.name}: {n} labelled battle{'s' if n != 1 else ''}" if counts else shape.name
        paths.append(
            f'<path d="{d}" fill="{_shade(n, top)}" data-country="{escape(shape.code)}">'
            f"<title>{escape(title)}</title></path>"
        )
    ident = f' id="{escape(element_id)}"' if element_id else ""
    return (
        f'<svg{ident} class="world-map" viewBox="{VIEWBOX}" role="img" aria-label="{escape(label)}" '
        'xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="xMidYMid meet">'
        '<g stroke="#fff" stroke-width="0.6" vector-effect="non-scaling-stroke" stroke-linejoin="round">'
        + "".join(paths)
        + "</g></svg>"
    )


def _shade(n: int, top: int) -> str:
    if n <= 0 or top <= 0:
        return EMPTY
    # log scale: one battle in a country is visible beside a thousand in another
    step = math.log1p(n) / math.log1p(top)
    return SHADES[min(len(SHADES) - 1, int(step * len(SHADES) - 1e-9))]


@lru_cache(maxsize=1)
def _country_paths() -> tuple[tuple[CountryShape, str], ...]:
    out = []
    for shape in world_countries():
        if shape.continent == "Antarctica":
            continue
        d = "".join(_ring_path(ring) for ring in shape.rings)
        if d:
            out.append((shape, d))
    return tuple(out)


def _ring_path(ring: list[tuple[float, float]]) -> str:
    """One closed ring, rounded to 0.1 degree (~10 km: the 1:110m outlines are coarser)."""
    points: list[tuple[float, float]] = []
    for lon, lat in ring:
        p = (round(lon, 1), round(-max(SOUTH, min(NORTH, lat)), 1))
        if not points or p != points[-1]:
            points.append(p)
    if len(points) < 3:
        return ""
    return "M" + "L".join(f"{x:g} {y:g}" for x, y in points) + "Z"
