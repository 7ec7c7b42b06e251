"""Issue 17 item 7: the first visit offers a bundled demo photo (a real street
with a legible sign, from the GeoBrowse benchmark, MIT licence), so the
offline arena, its two OCR baselines, shows a real result; in real Chromium
against `arena serve` with the default offline pool."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import SCREENSHOTS
from tests.web.axe import assert_accessible
from tests.web.battles import new_page, wait_until_voting_opens
from tests.web.conftest import ArenaServer

pytestmark = pytest.mark.browser

# both offline contenders OCR the photo (the GATE one in 11 views: 131 s measured on this loaded 2-core host)
ANSWER_TIMEOUT_MS = 300_000


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_first_visit_offers_the_demo_photo(arena_server: ArenaServer, chromium: Any, size: str) -> None:
    context, page, errors = new_page(chromium, size)
    page.goto(arena_server.url + "/")
    offer = page.locator("#demo-offer")
    assert offer.is_visible() and "MIT licence" in offer.inner_text()
    page.screenshot(path=str(SCREENSHOTS / f"demo-offer-{size}.png"), full_page=True)
    assert_accessible(page, f"arena, first visit with the demo offer, {size}")
    page.get_by_role("button", name="Try the demo photo").click()
    page.wait_for_function("() => document.getElementById('photo-preview').naturalWidth > 0")
    assert page.get_by_label("Your question").input_value() == "Which country is this? What clues give it away?"
    page.get_by_role("button", name="Start battle").click()
    page.locator("#battle").wait_for(state="visible")
    page.wait_for_function("() => !document.querySelector('[data-choice=a]').disabled", timeout=ANSWER_TIMEOUT_MS)
    wait_until_voting_opens(page)
    answers = [page.locator(f"#pane-{side} [data-role=answer]").inner_text() for side in "ab"]
    # a real result: both baselines read the sign and place the photo in China, as a country
    for answer in answers:
        assert "电子抓拍" in answer
        assert "Best guess: somewhere in China." in answer
        assert "I can't place this photo" not in answer
    page.screenshot(path=str(SCREENSHOTS / f"demo-result-{size}.png"), full_page=True)
    assert_accessible(page, f"battle, offline baselines' answers, {size}")
    # once a battle was started here, the offer is gone
    page.goto(arena_server.url + "/")
    assert page.locator("#demo-offer").is_hidden()
    assert errors == []
    context.close()
