"""Coordinates read out of answers."""

from __future__ import annotations

import pytest

from arena.geo.coordinates import find_coordinates


class TestFindCoordinates:
    def test_decimal_degrees_with_hemispheres(self) -> None:
        assert find_coordinates("The tower is at 48.8584° N, 2.2945° E.") == [pytest.approx((48.8584, 2.2945))]

    def test_south_and_west_are_negative(self) -> None:
        assert find_coordinates("22.9519° S, 43.2105° W") == [pytest.approx((-22.9519, -43.2105))]

    def test_degrees_minutes_seconds(self) -> None:
        ((lat, lon),) = find_coordinates("48°51′30″N 2°17′40″E")
        assert lat == pytest.approx(48 + 51 / 60 + 30 / 3600)
        assert lon == pytest.approx(2 + 17 / 60 + 40 / 3600)

    def test_bracketed_and_bare_signed_pairs_in_reading_order(self) -> None:
        text = "First (35.6895, 139.6917), then -33.8568, 151.2153."
        assert find_coordinates(text) == [
            pytest.approx((35.6895, 139.6917)),
            pytest.approx((-33.8568, 151.2153)),
        ]

    def test_a_bracketed_pair_is_read_once(self) -> None:
        assert len(find_coordinates("(26.25, 105.93)")) == 1

    def test_impossible_or_non_coordinate_numbers_are_ignored(self) -> None:
        assert find_coordinates("(95.0, 10.0) and 1.5, 2 and version 3.11, 4.5") == []
