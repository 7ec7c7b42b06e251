"""Great-circle distances on worked examples."""

from __future__ import annotations

import math

import pytest

from arena.geo.distance import EARTH_RADIUS_KM, great_circle_km


class TestGreatCircle:
    def test_a_degree_of_longitude_on_the_equator(self) -> None:
        assert great_circle_km(0, 0, 0, 1) == pytest.approx(2 * math.pi * EARTH_RADIUS_KM / 360, abs=1e-6)
        assert great_circle_km(0, 0, 0, 1) == pytest.approx(111.195, abs=1e-3)

    def test_quarter_and_half_of_a_meridian(self) -> None:
        assert great_circle_km(0, 0, 90, 0) == pytest.approx(10_007.557, abs=0.001)
        assert great_circle_km(90, 0, -90, 0) == pytest.approx(20_015.114, abs=0.001)

    def test_antipodes_do_not_fail_on_rounding(self) -> None:
        assert great_circle_km(0, 0, 0, 180) == pytest.approx(math.pi * EARTH_RADIUS_KM, abs=1e-6)
        assert great_circle_km(35.0, 139.0, -35.0, -41.0) == pytest.approx(math.pi * EARTH_RADIUS_KM, abs=1e-3)

    def test_nashville_to_los_angeles(self) -> None:
        # The textbook haversine example gives 2887.2600 km on a 6372.8 km sphere.
        assert great_circle_km(36.12, -86.67, 33.94, -118.40) == pytest.approx(
            2887.2600 * EARTH_RADIUS_KM / 6372.8, abs=0.001
        )

    def test_across_the_date_line_is_short(self) -> None:
        assert great_circle_km(0, 179.5, 0, -179.5) == pytest.approx(111.195, abs=1e-3)

    def test_symmetric_and_zero_at_the_spot(self) -> None:
        assert great_circle_km(26.25, 105.93, 43.88, 125.32) == pytest.approx(
            great_circle_km(43.88, 125.32, 26.25, 105.93)
        )
        assert great_circle_km(43.88, 125.32, 43.88, 125.32) == 0.0

    def test_a_metre_is_a_metre(self) -> None:
        # 1e-5 degree of latitude ~ 1.11 m: haversine keeps precision where acos would not
        assert great_circle_km(48.0, 2.0, 48.00001, 2.0) * 1000 == pytest.approx(1.112, abs=0.001)
