"""World country outlines, shipped by a package: Natural Earth 1:110m Admin 0
countries (public domain, naturalearthdata.com), as the `naturalearth_lowres`
dataset inside geopandas 0.14's wheel (BSD-3-Clause). geopandas itself is
never imported: the shapefile is read here with the standard library
(polygons and a dBase table are two simple binary formats), so the map costs
no GDAL at run time.
"""

from __future__ import annotations

import importlib.util
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pycountry

DATASET = "naturalearth_lowres"
SOURCE = "Natural Earth 1:110m countries (public domain), from geopandas 0.14's datasets (BSD-3-Clause)"
_POLYGON = 5
# Natural Earth units without an ISO 3166-1 code of their own (Kosovo has the
# user-assigned XK that GeoNames also uses; N. Cyprus and Somaliland have none).
_NON_ISO = {"Kosovo": "XK", "N. Cyprus": "", "Somaliland": ""}

Ring = list[tuple[float, float]]  # (lon, lat) points, closed


@dataclass(frozen=True)
class CountryShape:
    code: str  # ISO 3166-1 alpha-2 ('' for Natural Earth units without one)
    name: str
    continent: str  # Natural Earth's continent name
    rings: tuple[Ring, ...]


class WorldDataMissing(RuntimeError):
    """The package that ships the country outlines is not installed."""


def dataset_dir() -> Path:
    spec = importlib.util.find_spec("geopandas")
    if spec is None or not spec.submodule_search_locations:
        raise WorldDataMissing("geopandas<1.0 (for its Natural Earth countries) is not installed")
    folder = Path(next(iter(spec.submodule_search_locations))) / "datasets" / DATASET
    if not (folder / f"{DATASET}.shp").exists():
        raise WorldDataMissing(
            f"{folder} has no {DATASET}.shp: geopandas 1.0 and later dropped it; install geopandas<1.0"
        )
    return folder


@lru_cache(maxsize=1)
def world_countries() -> tuple[CountryShape, ...]:
    """Every country outline, in the dataset's order."""
    folder = dataset_dir()
    records = _read_dbf((folder / f"{DATASET}.dbf").read_bytes())
    shapes = _read_polygons((folder / f"{DATASET}.shp").read_bytes())
    out = []
    for record, rings in zip(records, shapes, strict=True):
        out.append(
            CountryShape(_alpha2(record["iso_a3"], record["name"]), record["name"], record["continent"], tuple(rings))
        )
    return tuple(out)


def _alpha2(iso_a3: str, name: str) -> str:
    if name in _NON_ISO:
        return _NON_ISO[name]
    country = pycountry.countries.get(alpha_3=iso_a3)
    return country.alpha_2 if country else ""


def _read_dbf(data: bytes) -> list[dict[str, str]]:
    count, header_len, record_len = struct.unpack("<IHH", data[4:12])
    fields: list[tuple[str, int]] = []
    at = 32
    while data[at] != 0x0D:
        name = data[at : at + 11].split(b"\0", 1)[0].decode("ascii")
        fields.append((name, data[at + 16]))
        at += 32
    rows = []
    for i in range(count):
        start = header_len + i * record_len + 1  # one byte: the deletion flag
        row: dict[str, str] = {}
        for name, width in fields:
            row[name] = data[start : start + width].decode("utf-8", "replace").strip()
            start += width
        rows.append(row)
    return rows


def _read_polygons(data: bytes) -> list[list[Ring]]:
    """ESRI shapefile main file: a 100-byte header, then (number, length) records."""
    at, end = 100, len(data)
    shapes: list[list[Ring]] = []
    while at + 8 <= end:
        length = struct.unpack(">i", data[at + 4 : at + 8])[0] * 2  # in 16-bit words
        body = data[at + 8 : at + 8 + length]
        at += 8 + length
        kind = struct.unpack("<i", body[:4])[0]
        if kind != _POLYGON:
            shapes.append([])
            continue
        n_parts, n_points = struct.unpack("<ii", body[36:44])
        parts = list(struct.unpack(f"<{n_parts}i", body[44 : 44 + 4 * n_parts])) + [n_points]
        coords = struct.unpack(f"<{2 * n_points}d", body[44 + 4 * n_parts : 44 + 4 * n_parts + 16 * n_points])
        points = list(zip(coords[0::2], coords[1::2], strict=True))
        shapes.append([points[parts[k] : parts[k + 1]] for k in range(n_parts)])
    return shapes
