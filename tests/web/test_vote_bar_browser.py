"""Issue 17 item 6 (the rest): on a phone (390x844) the vote buttons become a
bar at the bottom of the screen once both answers are in, and leave it with the
vote; on the desktop they stay where they are. Real Chromium against `arena
serve` with paced loopback contenders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SCREENSHOTS
from tests.web.axe import assert_accessible
from tests.web.battles import new_page, start_battle, wait_until_voting_opens
from tests.web.conftest import ArenaServer

pytestmark = pytest.mark.browser

POSITION = "() => getComputedStyle(document.getElementById('vote-buttons')).position"


def bar_box(page: Any) -> dict[str, float]:
    box = page.locator("#vote-buttons").bounding_box()
    assert box is not None
    return box


class TestVoteBar:
    def test_the_phone_gets_a_sticky_bar_when_both_answers_are_ready(
        self, paced_arena: ArenaServer, chromium: Any, sample_photo: Path
    ) -> None:
        context, page, errors = new_page(chromium, "phone")
        start_battle(page, paced_arena.url, sample_photo)
        assert page.evaluate(POSITION) == "static"  # streaming: no bar over the answers yet
        wait_until_voting_opens(page)
        assert page.evaluate(POSITION) == "fixed"
        assert page.locator("#verdict-note").inner_text() == "Both answers are in. Which one is better? Tap your vote."
        page.evaluate("() => window.scrollTo(0, 0)")  # at the top of the page, with the answers
        box = bar_box(page)
        assert box["y"] + box["height"] == pytest.approx(844, abs=1)  # on the screen's bottom edge
        assert box["width"] == pytest.approx(390, abs=1)
        assert box["height"] < 844 * 0.2  # a bar, not a wall
        # nothing of the page is hidden for good: scrolled to the end, the next actions sit above the bar
        page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
        footer = page.locator(".site-footer").bounding_box()
        assert footer is not None and footer["y"] + footer["height"] <= bar_box(page)["y"] + 1
        page.screenshot(path=str(SCREENSHOTS / "vote-bar-phone-bottom.png"))
        page.evaluate("() => window.scrollTo(0, 0)")
        page.screenshot(path=str(SCREENSHOTS / "vote-bar-phone.png"))
        assert_accessible(page, "battle, vote bar open, phone")
        for choice in ("a", "b", "tie", "both_bad"):
            assert page.locator(f'[data-choice="{choice}"]').is_visible()
        page.get_by_role("button", name="B is better").tap()
        page.get_by_role("button", name="New battle").wait_for()
        assert page.evaluate(POSITION) == "static"  # the vote is cast: the bar is gone
        assert "Thanks! You voted: Model B is better." in page.locator("#verdict-note").inner_text()
        assert errors == []
        context.close()

    def test_the_desktop_keeps_the_buttons_in_place(
        self, paced_arena: ArenaServer, chromium: Any, sample_photo: Path
    ) -> None:
        context, page, errors = new_page(chromium, "desktop")
        start_battle(page, paced_arena.url, sample_photo)
        wait_until_voting_opens(page)
        assert page.evaluate(POSITION) == "static"
        assert_accessible(page, "battle, voting open, desktop")
        assert errors == []
        context.close()
