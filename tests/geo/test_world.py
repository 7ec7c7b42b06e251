"""The shipped world outlines."""

from __future__ import annotations

from arena.geo.world import world_countries


class TestWorldCountries:
    def test_natural_earth_110m_countries_with_iso_codes(self) -> None:
        shapes = world_countries()
        assert len(shapes) == 177  # Natural Earth 1:110m Admin 0
        by_code = {s.code: s for s in shapes if s.code}
        assert {"JP", "CN", "FR", "US", "BR", "AU", "EG", "XK"} <= set(by_code)
        assert len(by_code) >= 174
        assert by_code["JP"].continent == "Asia" and by_code["JP"].name == "Japan"

    def test_outlines_are_closed_rings_inside_the_globe(self) -> None:
        for shape in world_countries():
            assert shape.rings
            for ring in shape.rings:
                assert len(ring) >= 4 and ring[0] == ring[-1]
                assert all(
                    -180.000001 <= lon <= 180.000001 and -90 <= lat <= 90 for lon, lat in ring
                )  # 180 + 6e-14 in Russia

    def test_japan_sits_where_japan_is(self) -> None:
        japan = next(s for s in world_countries() if s.code == "JP")
        lons = [lon for ring in japan.rings for lon, _ in ring]
        lats = [lat for ring in japan.rings for _, lat in ring]
        assert 129 < min(lons) < 131 and 145 < max(lons) < 146.5
        assert 30 < min(lats) < 32 and 45 < max(lats) < 46
