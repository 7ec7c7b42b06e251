"""Issue 17: the arena from the keyboard, in real Chromium against `arena serve`.

Ctrl/Cmd+Enter in the question box starts a battle (Enter alone is a
newline); once voting is open 1/2/3/4 or A/B/T/X vote, said in the verdict's
live region; keys typed into a field, or pressed before voting opens, vote
nothing. The contenders are a real loopback OpenAI-compatible server whose
`paced-*` models take about two seconds, so "before voting opens" is real."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SCREENSHOTS
from tests.web.conftest import ArenaServer

pytestmark = pytest.mark.browser

QUESTION = "Which country is this? What clues give it away?"


def votes_in(database: Path) -> list[str]:
    with sqlite3.connect(database) as db:
        return [row[0] for row in db.execute("SELECT choice FROM votes ORDER BY id")]


def vote_requests(page: Any) -> list[str]:
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.post_data or "") if r.url.endswith("/vote") else None)
    return sent


def wait_until_voting_opens(page: Any) -> None:
    page.wait_for_function("() => !document.querySelector('[data-choice=a]').disabled", timeout=60_000)


class TestKeyboard:
    def test_ctrl_enter_starts_and_keys_vote_once_voting_is_open(
        self, paced_arena: ArenaServer, chromium: Any, sample_photo: Path
    ) -> None:
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        sent = vote_requests(page)
        page.goto(paced_arena.url + "/")
        page.get_by_label("Drop a photo here").set_input_files(sample_photo)
        box = page.get_by_label("Your question")
        box.fill(QUESTION)

        box.press("Enter")  # a newline, as in any text box: no battle
        assert box.input_value() == QUESTION + "\n"
        assert page.locator("#battle").is_hidden()
        box.press("1")  # typing a digit in the box is typing, not a vote
        assert box.input_value() == QUESTION + "\n1"
        box.fill(QUESTION)
        box.press("Control+Enter")
        page.locator("#battle").wait_for(state="visible")
        assert page.locator("#question-prompt").inner_text() == QUESTION
        assert box.input_value() == QUESTION  # Ctrl+Enter added no newline

        # While the answers stream, the keys do nothing.
        page.keyboard.press("1")
        page.keyboard.press("a")
        assert page.locator('[data-choice="a"]').is_disabled()

        wait_until_voting_opens(page)
        note = page.locator("#verdict-note")
        assert note.get_attribute("aria-live") == "polite" and note.get_attribute("role") == "status"
        assert "Press 1 or A if A is better" in note.inner_text()
        assert page.get_by_role("button", name="A is better", exact=True).get_attribute("aria-keyshortcuts") == "1 A"

        # A key typed into a field (one any extension or later form could add) is not a vote.
        page.evaluate("""() => {
            const field = document.createElement('input');
            field.id = 'side-field';
            field.setAttribute('aria-label', 'A side field');
            document.getElementById('verdict').append(field);
        }""")
        field = page.locator("#side-field")
        field.press("2")
        field.press("x")
        assert field.input_value() == "2x"
        page.keyboard.press("Control+1")  # a browser shortcut, not a vote
        page.evaluate("() => document.getElementById('side-field').remove()")
        assert all(b.is_enabled() for b in page.locator("[data-choice]").all())
        assert sent == []

        page.keyboard.press("b")
        page.get_by_role("button", name="New battle").wait_for()
        assert "Thanks! You voted (key B): Model B is better." in note.inner_text()
        assert page.locator('[data-choice="b"]').get_attribute("aria-pressed") == "true"
        page.keyboard.press("1")  # one vote a battle: later keys send nothing
        page.keyboard.press("3")
        assert len(sent) == 1 and '"choice":"b"' in sent[0]
        assert votes_in(paced_arena.database)[-1:] == ["b"]

        # Cmd+Enter (macOS) starts the next battle; 4 is "both are bad", T a tie.
        page.get_by_role("button", name="New battle").click()
        page.get_by_label("Drop a photo here").set_input_files(sample_photo)
        box.fill(QUESTION)
        box.press("Meta+Enter")
        wait_until_voting_opens(page)
        page.keyboard.press("4")
        page.get_by_role("button", name="New battle").wait_for()
        assert "You voted (key 4): Both are bad." in note.inner_text()
        assert votes_in(paced_arena.database)[-2:] == ["b", "both_bad"]
        assert errors == []
        context.close()

    def test_the_phone_hides_the_key_hints(self, paced_arena: ArenaServer, chromium: Any) -> None:
        context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        page = context.new_page()
        page.goto(paced_arena.url + "/")
        assert page.locator("#submit-keys").is_hidden()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "arena-keyboard-phone.png"), full_page=True)
        context.close()

    def test_no_inline_script_on_the_arena_page(self, paced_arena: ArenaServer, chromium: Any) -> None:
        # The keyboard code is in static/arena.js: a CSP without 'unsafe-inline' keeps it working.
        page = chromium.new_page()
        page.goto(paced_arena.url + "/")
        inline = page.evaluate("() => [...document.scripts].filter(s => !s.src).length")
        handlers = page.evaluate(
            "() => [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))"
            ".filter(n => n.startsWith('on')).length"
        )
        assert inline == 0 and handlers == 0
        page.close()
