"""Issue 17 item 5: every battle has its own address, `/battle/{id}`, in real
Chromium against `arena serve`.

Starting a battle puts its address in the address bar; a reload mid-stream
resumes it, a reload after the vote shows the vote and the names; another
browser sees the battle read-only; an unknown id is a 404 page; "Same photo,
new pair" starts a new battle on the stored photo. The contenders are a real
loopback OpenAI-compatible server whose `paced-*` models take about two
seconds, so "mid-stream" is real."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import SCREENSHOTS
from tests.web.axe import assert_accessible
from tests.web.battles import BATTLE_PATH, QUESTION, new_page, start_battle, wait_until_voting_opens
from tests.web.conftest import ArenaServer

pytestmark = pytest.mark.browser


def battle_row(database: Path, battle_id: str) -> tuple[str, str, str]:
    with sqlite3.connect(database) as db:
        row = db.execute("SELECT image_sha256, prompt, status FROM battles WHERE id = ?", (battle_id,)).fetchone()
    assert row is not None
    return row[0], row[1], row[2]


@pytest.mark.parametrize("size", ["desktop", "phone"])
class TestBattleAddress:
    def test_reload_resumes_then_shows_the_vote_and_names(
        self, paced_arena: ArenaServer, chromium: Any, sample_photo: Path, size: str
    ) -> None:
        context, page, errors = new_page(chromium, size)
        battle_id = start_battle(page, paced_arena.url, sample_photo)
        # mid-stream: the first words are in, the answers are not done
        page.locator("#pane-a [data-role=answer]").filter(has_text="Where this was taken").wait_for()
        assert page.locator('[data-choice="a"]').is_disabled()
        page.reload()
        assert page.url.endswith(f"/battle/{battle_id}")
        page.locator("#question-prompt").filter(has_text=QUESTION).wait_for()  # resumed from /api/battles/{id}
        wait_until_voting_opens(page)
        for side in "ab":
            assert "Best guess: Paris, France" in page.locator(f"#pane-{side} [data-role=answer]").inner_text()
        # the photo is the stored JPEG, not the browser's copy of the upload
        assert page.locator("#question-photo").get_attribute("src", timeout=1000).startswith("/images/")
        assert page.evaluate("() => document.getElementById('question-photo').naturalWidth") > 0

        page.get_by_role("button", name="B is better").click()
        page.get_by_role("button", name="New battle").wait_for()
        page.reload()
        note = page.locator("#verdict-note")
        page.locator("#pane-a .model-name").wait_for()
        assert "Your vote: Model B is better." in note.inner_text()
        names = {page.locator(f"#pane-{side} .model-name").inner_text() for side in "ab"}
        assert names == {"north", "south"}
        assert page.locator('[data-choice="b"]').get_attribute("aria-pressed") == "true"
        assert all(b.is_disabled() for b in page.locator("[data-choice]").all())
        assert battle_row(paced_arena.database, battle_id)[2] == "voted"
        page.screenshot(path=str(SCREENSHOTS / f"battle-page-voted-{size}.png"), full_page=True)
        assert_accessible(page, f"battle page, voted and revealed, {size}")

        # another browser (no cookie of the starter): the same battle, read-only, names shown
        other, stranger, stranger_errors = new_page(chromium, size)
        stranger.goto(paced_arena.url + f"/battle/{battle_id}")
        stranger.locator("#pane-b .model-name").wait_for()
        assert "The vote on this battle: Model B is better." in stranger.locator("#verdict-note").inner_text()
        assert stranger.locator("#form-error").is_hidden()
        other.close()
        assert errors == [] and stranger_errors == []
        context.close()

    def test_another_browser_sees_an_open_battle_read_only(
        self, paced_arena: ArenaServer, chromium: Any, sample_photo: Path, size: str
    ) -> None:
        context, page, _ = new_page(chromium, size)
        battle_id = start_battle(page, paced_arena.url, sample_photo)
        wait_until_voting_opens(page)

        other, stranger, errors = new_page(chromium, size)
        sent: list[str] = []
        stranger.on("request", lambda r: sent.append(r.url) if r.url.endswith("/vote") else None)
        stranger.goto(paced_arena.url + f"/battle/{battle_id}")
        note = stranger.locator("#verdict-note")
        stranger.wait_for_function(
            "() => document.getElementById('verdict-note').textContent.includes('read-only')", timeout=20_000
        )
        assert "Only the browser that started this battle can vote on it" in note.inner_text()
        stranger.locator("#pane-b [data-role=answer]").filter(has_text="Best guess").wait_for()
        assert stranger.locator("#vote-buttons").is_hidden()
        assert stranger.locator(".model-name").count() == 0  # not voted: still anonymous
        stranger.keyboard.press("1")
        stranger.wait_for_timeout(300)
        assert sent == []
        stranger.screenshot(path=str(SCREENSHOTS / f"battle-page-read-only-{size}.png"), full_page=True)
        assert_accessible(stranger, f"battle page, read-only, {size}")
        # and the server agrees: a vote without the starter's cookie is refused
        refused = httpx.post(paced_arena.url + f"/api/battles/{battle_id}/vote", json={"choice": "a"})
        assert refused.status_code == 403 and "started the battle" in refused.json()["message"]
        assert battle_row(paced_arena.database, battle_id)[2] == "ready"
        other.close()
        # the starter still can
        page.get_by_role("button", name="Tie").click()
        page.get_by_role("button", name="New battle").wait_for()
        assert battle_row(paced_arena.database, battle_id)[2] == "voted"
        assert errors == []
        context.close()

    def test_same_photo_new_pair(self, paced_arena: ArenaServer, chromium: Any, sample_photo: Path, size: str) -> None:
        context, page, errors = new_page(chromium, size)
        first = start_battle(page, paced_arena.url, sample_photo)
        wait_until_voting_opens(page)
        page.get_by_role("button", name="A is better").click()
        page.get_by_role("button", name="Same photo, new pair").click()
        page.wait_for_function(
            "first => location.pathname.startsWith('/battle/') && !location.pathname.endsWith(first)", arg=first
        )
        second = BATTLE_PATH.search(page.url).group(1)  # type: ignore[union-attr]
        wait_until_voting_opens(page)
        assert page.locator("#question-prompt").inner_text() == QUESTION
        assert page.locator(".model-name").count() == 0  # a fresh, anonymous battle
        sha_first, prompt_first, _ = battle_row(paced_arena.database, first)
        sha_second, prompt_second, status = battle_row(paced_arena.database, second)
        assert (sha_second, prompt_second) == (sha_first, prompt_first) and status == "ready"
        # back goes to the earlier battle, as it was left
        page.go_back()
        page.wait_for_function("first => location.pathname.endsWith(first)", arg=first)
        page.locator("#pane-a .model-name").wait_for()
        assert "Your vote: Model A is better." in page.locator("#verdict-note").inner_text()
        assert errors == []
        context.close()


class TestUnknownBattle:
    def test_an_unknown_id_is_a_404_page(self, paced_arena: ArenaServer, chromium: Any) -> None:
        context, page, errors = new_page(chromium, "desktop")
        response = page.goto(paced_arena.url + "/battle/0123456789abcdef")
        assert response is not None and response.status == 404
        assert page.get_by_role("heading", name="No such battle").is_visible()
        assert page.get_by_role("link", name="Start a new battle").get_attribute("href") == "/"
        page.screenshot(path=str(SCREENSHOTS / "battle-page-404.png"))
        assert_accessible(page, "battle page, unknown id (404)")
        api = httpx.get(paced_arena.url + "/api/battles/0123456789abcdef")
        assert api.status_code == 404 and api.json()["error"] == "battle_not_found"
        assert errors == []
        context.close()

    def test_reusing_the_photo_of_an_unknown_battle_is_refused(self, paced_arena: ArenaServer) -> None:
        refused = httpx.post(
            paced_arena.url + "/api/battles", data={"prompt": QUESTION, "same_photo": "0123456789abcdef"}
        )
        assert refused.status_code == 404
        assert refused.json()["message"] == "The battle whose photo you asked to reuse does not exist."
