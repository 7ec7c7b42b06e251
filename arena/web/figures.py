"""Every figure the leaderboard shows, rounded once, here.

Rounding is half up on the decimal a person reads (0.5625 shows as 56.3%),
never Python's binary round-half-even beside JavaScript's toFixed: the page's
script prints these strings (or numbers already rounded here) and formats
nothing itself, so the server's page and every view of it agree.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def rounded(x: float, places: int = 0) -> Decimal:
    """`x` rounded half up to `places` decimals, from its shortest repr (never -0)."""
    r = Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return r.copy_abs() if r.is_zero() else r


def points(x: float) -> str:
    """A rating or a rating difference: whole points, no grouping (1287, -16)."""
    return f"{rounded(x):f}"


def interval(low: float, high: float) -> str:
    """A rating interval: 1270–1305."""
    return f"{points(low)}–{points(high)}"


def percent(share: float, places: int = 1) -> str:
    """A share of 1 as a percentage: 0.5625 -> 56.3%."""
    return f"{rounded(share * 100, places):f}%"


def percent_value(share: float | None, places: int = 1) -> float | None:
    """The same percentage as a number, for the script to print as it is."""
    return None if share is None else float(rounded(share * 100, places))


def count(n: int | float) -> str:
    """A count: 12,345."""
    return f"{int(n):,}"


def km(x: float) -> str:
    """A distance or a score in whole units, grouped: 1,493."""
    return f"{rounded(x):,f}"


def coefficient(x: float) -> str:
    """A style coefficient (log-odds per standard deviation): +0.123."""
    return f"{rounded(x, 3):+f}"


# the same functions as Jinja filters, for the templates (`{{ share | percent(0) }}`)
FILTERS = {"points": points, "percent": percent, "count": count, "km": km, "coefficient": coefficient}
