"""The opt-in location on the upload form, in Chromium against `arena serve`:
a pin placed on the world map becomes the battle's private label."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import pytest

from arena.geo.distance import great_circle_km
from tests.conftest import SCREENSHOTS
from tests.web.conftest import SAMPLE_IMAGES, ArenaServer, serve_arena

pytestmark = pytest.mark.browser

CHANGCHUN = (43.88, 125.32)  # level1-5.jpg's gold answer; the photo carries no GPS


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("arena-location")
    with serve_arena(base, base / "no-pool.toml") as server:
        yield server


class TestPinOnTheMap:
    def test_a_pin_placed_in_chromium_is_kept_as_the_label(self, arena: ArenaServer, chromium: Any) -> None:
        photo = SAMPLE_IMAGES / "level1-5.jpg"
        if not photo.exists():
            pytest.fail(f"sample photo missing: {photo} (set GEOARENA_SHARED to the shared dir)")
        context = chromium.new_context(viewport={"width": 1280, "height": 1000})
        outside: list[str] = []
        context.on(
            "request",
            lambda r: None if r.url.startswith((arena.url, "blob:" + arena.url, "data:")) else outside.append(r.url),
        )
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            page.goto(arena.url + "/")
            assert page.locator("#location-extra").is_hidden()
            page.get_by_label("Use this photo's location to score the answers").check()
            assert page.locator("#pin-map").is_visible()
            # where Changchun is on the map, through the SVG's own transform
            x, y = page.evaluate(
                """([lat, lon]) => { const svg = document.getElementById('pin-map');
                     const p = new DOMPoint(lon, -lat).matrixTransform(svg.getScreenCTM());
                     return [p.x, p.y]; }""",
                list(CHANGCHUN),
            )
            page.mouse.click(x, y)
            assert re.fullmatch(
                r"Pin placed at 4\d\.\d\d° N, 12\d\.\d\d° E\.", page.locator("#pin-readout").inner_text()
            )
            lat, lon = map(float, page.locator("#location").input_value().split(","))
            assert great_circle_km(lat, lon, *CHANGCHUN) < 50  # a click is a pixel: about 0.5 degree here
            page.get_by_label("Drop a photo here").set_input_files(photo)
            page.locator("#photo-preview").wait_for(state="visible", timeout=10_000)
            page.get_by_label("Your question").fill("Which provincial capital city in China is this?")
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "upload-location-pin.png"), full_page=True)
            page.get_by_role("button", name="Start battle").click()
            page.locator("#battle").wait_for(state="visible")
        finally:
            context.close()
        assert errors == [] and outside == []
        with sqlite3.connect(arena.database) as db:
            ((source, label_lat, label_lon, precision),) = db.execute(
                "SELECT source, lat, lon, precision_km FROM battle_labels"
            ).fetchall()
        assert (source, precision) == ("pin", 1.0)
        assert great_circle_km(label_lat, label_lon, lat, lon) < 1.0

    def test_without_consent_the_form_sends_no_location(self, arena: ArenaServer, chromium: Any) -> None:
        context = chromium.new_context(viewport={"width": 1280, "height": 1000})
        page = context.new_page()
        sent: list[bytes] = []
        page.on("request", lambda r: sent.append(r.post_data_buffer or b"") if r.url.endswith("/api/battles") else None)
        try:
            page.goto(arena.url + "/")
            page.get_by_label("Drop a photo here").set_input_files(SAMPLE_IMAGES / "level1-5.jpg")
            page.locator("#photo-preview").wait_for(state="visible", timeout=10_000)
            page.get_by_label("Your question").fill("Which provincial capital city in China is this?")
            page.get_by_role("button", name="Start battle").click()
            page.locator("#battle").wait_for(state="visible")
        finally:
            context.close()
        (body,) = sent
        assert b"share_location" not in body and b'name="location"' not in body and b'name="place"' not in body
        with sqlite3.connect(arena.database) as db:
            assert db.execute("SELECT count(*) FROM battle_labels").fetchone() == (1,)  # only the first test's
