"""The public cell of a location label: the coarse square every published distance is
measured from, so that nothing published can place a label more finely than its cell.

The cells tile the globe in rows `CELL_KM` tall (in latitude); each row is cut into as
many equal cells as fit `CELL_KM` wide at the row's middle latitude, so a cell is
`CELL_KM` tall and between one and two `CELL_KM` wide (a row around a pole too short
for two is one cell, its whole ring). A point's cell is a pure function of the point:
the same label always falls in the same cell, so publishing its distances again, from
any number of snapshots, adds nothing.
"""

from __future__ import annotations

import math

CELL_KM = 10.0
KM_PER_DEGREE = 111.195  # of latitude (a great circle's degree on the mean Earth radius)


def cell_center(lat: float, lon: float, size_km: float = CELL_KM) -> tuple[float, float]:
    """The centre of the cell that holds the point (degrees)."""
    south, north, west, east = cell_bounds(lat, lon, size_km)
    return (south + north) / 2, (west + east) / 2


def cell_bounds(lat: float, lon: float, size_km: float = CELL_KM) -> tuple[float, float, float, float]:
    """(south, north, west, east) of the cell that holds the point, in degrees."""
    step = size_km / KM_PER_DEGREE
    row = min(math.ceil(180.0 / step) - 1, max(0, math.floor((lat + 90.0) / step)))
    south = -90.0 + row * step
    north = min(90.0, south + step)
    middle = (south + north) / 2
    columns = max(1, math.floor(360.0 * math.cos(math.radians(middle)) * KM_PER_DEGREE / size_km))
    width = 360.0 / columns
    west = -180.0 + (math.floor((lon + 180.0) / width) % columns) * width
    return south, north, west, west + width
