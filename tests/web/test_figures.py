"""One rounding for every figure on the leaderboard (issue 17, item 2): half
up on the decimal a person reads, the same in Python and in the page."""

from __future__ import annotations

import pytest

from arena.web import figures


@pytest.mark.parametrize(
    ("share", "shown"),
    [(0.5625, "56.3%"), (0.56249, "56.2%"), (0.0005, "0.1%"), (1.0, "100.0%"), (0.0, "0.0%")],
)
def test_percent_rounds_half_up_on_the_decimal(share: float, shown: str) -> None:
    # "%.1f" % 56.25 gives 56.2 (binary, half even) where JavaScript's toFixed gives 56.3
    assert figures.percent(share) == shown


def test_the_script_gets_numbers_it_can_print_as_they_are() -> None:
    assert figures.percent_value(0.5625) == 56.3 and figures.percent_value(None) is None
    assert repr(figures.percent_value(0.1234)) == "12.3"


def test_points_intervals_counts_and_coefficients() -> None:
    assert figures.points(1234.5) == "1235" and figures.points(-3.5) == "-4"
    assert figures.points(-0.4) == "0"  # never "-0"
    assert figures.interval(985.5, 1015.49) == "986–1015"
    assert figures.count(12345.0) == "12,345" and figures.km(1492.5) == "1,493"
    assert figures.coefficient(0.12345) == "+0.123" and figures.coefficient(-0.0004) == "+0.000"
    assert figures.percent(0.125, 0) == "13%"


def test_the_templates_use_the_same_functions() -> None:
    from jinja2 import Environment

    env = Environment()
    env.filters.update(figures.FILTERS)
    assert env.from_string("{{ 0.5625 | percent }} {{ 0.125 | percent(0) }} {{ 1234 | count }}").render() == (
        "56.3% 13% 1,234"
    )
