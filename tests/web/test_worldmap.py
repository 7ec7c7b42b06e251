"""The coverage map: inline SVG from shipped outlines, drawn by Chromium with the network cut."""

from __future__ import annotations

import re
from typing import Any

import pytest

from arena.web.worldmap import EMPTY, SHADES, world_map_svg


class TestWorldMapSvg:
    def test_countries_are_shaded_by_their_labelled_battles(self) -> None:
        svg = world_map_svg({"JP": 1, "CN": 100}, label="Labelled battles by country")
        by_country = {code: fill for fill, code in re.findall(r'fill="(#[0-9a-f]{6})" data-country="([A-Z]*)"', svg)}
        assert by_country["CN"] == SHADES[-1] and by_country["JP"] not in (EMPTY, SHADES[-1])
        assert by_country["FR"] == EMPTY
        assert "<title>Japan: 1 labelled battle</title>" in svg and "<title>China: 100 labelled battles</title>" in svg

    def test_no_outside_reference(self) -> None:
        svg = world_map_svg({}, label="map")
        assert re.findall(r"https?://[^\"]+", svg) == ["http://www.w3.org/2000/svg"]  # the namespace, never fetched
        assert "<image" not in svg and "href" not in svg


@pytest.mark.browser
class TestRenderedOffline:
    def test_chromium_draws_the_map_with_no_request(self, chromium: Any) -> None:
        context = chromium.new_context(viewport={"width": 1000, "height": 600})
        requests: list[str] = []
        context.route("**/*", lambda route: (requests.append(route.request.url), route.abort()))
        page = context.new_page()
        try:
            page.set_content(f"<!doctype html><body style='margin:0'>{world_map_svg({'JP': 3}, label='map')}</body>")
            boxes = page.evaluate(
                """() => Object.fromEntries([...document.querySelectorAll('path[data-country]')]
                     .filter(p => ['JP', 'CN', 'BR', 'US'].includes(p.dataset.country))
                     .map(p => { const b = p.getBoundingClientRect();
                                 return [p.dataset.country, [b.left, b.top, b.width, b.height]]; }))"""
            )
            count = page.evaluate("document.querySelectorAll('path[data-country]').length")
            shot = page.screenshot()
        finally:
            context.close()
        assert requests == []
        assert count >= 170
        jp, cn, br, us = boxes["JP"], boxes["CN"], boxes["BR"], boxes["US"]
        assert all(box[2] > 5 and box[3] > 5 for box in boxes.values())
        assert jp[0] > cn[0] and br[1] > us[1] and us[0] < cn[0]  # east, south and west where they belong
        assert len(shot) > 10_000  # a drawn map, not a blank page
