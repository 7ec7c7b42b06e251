"""The axe-core helper itself: it finds a real violation (so a clean page is
news), and the arena's pages outside the battle and the board pass it at
desktop size and at 390x844."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.axe import AXE, assert_accessible, run_axe
from tests.web.conftest import ArenaServer

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


def open_page(chromium: Any, url: str, size: str) -> tuple[Any, Any]:
    context = chromium.new_context(viewport=VIEWPORTS[size], is_mobile=size == "phone", has_touch=size == "phone")
    page = context.new_page()
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return context, page


class TestTheHelper:
    def test_it_is_the_pinned_npm_release_with_its_licence(self) -> None:
        assert AXE.exists(), "run `make install`"
        assert (AXE.parent / "LICENSE").read_text().startswith("Mozilla Public License")
        makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
        version = next(line.split(":=")[1].strip() for line in makefile.splitlines() if line.startswith("AXE_VERSION"))
        assert (AXE.parent / f"{version}.stamp").exists()

    def test_it_fails_on_serious_and_critical_violations(self, chromium: Any) -> None:
        context = chromium.new_context()
        page = context.new_page()
        # an image with no text alternative (critical) and grey on grey text (serious)
        page.set_content(
            '<html lang="en"><title>t</title><main><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">'
            '<p style="color:#aaa;background:#bbb">faint</p></main></html>'
        )
        report = run_axe(page, "a broken page")
        assert {v["id"] for v in report.blocking} >= {"image-alt", "color-contrast"}
        with pytest.raises(AssertionError, match=r"\[critical\] image-alt"):
            assert_accessible(page, "a broken page")
        context.close()


class TestPages:
    @pytest.mark.parametrize("size", ["desktop", "phone"])
    def test_terms(self, chromium: Any, arena_server: ArenaServer, size: str) -> None:
        context, page = open_page(chromium, arena_server.url + "/terms", size)
        assert_accessible(page, f"/terms, {size}")
        context.close()
