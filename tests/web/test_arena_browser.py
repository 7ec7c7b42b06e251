"""The arena in a real browser against the real server: upload a photo, ask,
wait for both offline contenders, vote, see the reveal, start again."""

from __future__ import annotations

import base64
import re
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.gatekeeper.policy import REFUSALS
from tests.conftest import SCREENSHOTS
from tests.web.conftest import ArenaServer, free_port, serve_arena

pytestmark = pytest.mark.browser

ANSWER_TIMEOUT_MS = 150_000  # both offline contenders OCR the photo on a shared CI core
OFFLINE_POOL = {"ocr-geolocator", "ocr-geolocator+gate"}


@pytest.fixture(scope="module")
def arena_with_a_dead_contender(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """An arena whose only two contenders are the OCR baseline and an
    OpenAI-compatible endpoint on a loopback port nobody listens on, so every
    battle has a side that fails."""
    base = tmp_path_factory.mktemp("arena-dead-contender")
    pool = base / "arena.toml"
    pool.write_text(
        '[[contenders]]\nname = "ocr-geolocator"\nprovider = "baseline"\nmodel = "ocr-geolocator"\n'
        'label = "baseline"\n\n'
        f'[[contenders]]\nname = "unreachable"\nprovider = "openai"\nmodel = "none"\n'
        f'base_url = "http://127.0.0.1:{free_port()}/v1"\ntimeout = 5\n'
    )
    with serve_arena(base, pool) as server:
        yield server


@pytest.fixture
def desktop(chromium: Any) -> Any:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def phone(chromium: Any) -> Any:
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


class TestArenaInBrowser:
    def test_upload_stream_vote_reveal(self, arena_server: ArenaServer, desktop: Any, sample_photo: Path) -> None:
        page = desktop
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(arena_server.url + "/")
        assert page.locator("#battle").is_hidden()
        assert page.locator('[data-choice="a"]').is_disabled()

        page.get_by_label("Drop a photo here").set_input_files(sample_photo)
        page.locator("#photo-preview").wait_for(state="visible", timeout=10_000)  # once the image decodes
        page.get_by_label("Your question").fill("Which country is this? What clues give it away?")
        page.get_by_role("button", name="Start battle").click()

        panes = [page.locator("#pane-a"), page.locator("#pane-b")]
        page.wait_for_function(
            "() => ['a', 'b'].every(s => document.querySelector(`#pane-${s}`).dataset.state === 'done')"
            " && !document.querySelector('[data-choice=a]').disabled",
            timeout=ANSWER_TIMEOUT_MS,
        )
        for pane in panes:
            assert re.fullmatch(r"Done in \d+\.\d s", pane.locator('[data-role="status"]').inner_text())
            assert pane.locator(".answer").inner_text().strip()
            assert pane.locator(".answer script").count() == 0
        assert page.locator("#battle-form").is_hidden()
        for choice in ("A is better", "B is better", "Tie", "Both are bad"):
            assert page.get_by_role("button", name=choice).is_enabled()

        page.get_by_role("button", name="A is better").click()
        new_battle = page.get_by_role("button", name="New battle")
        new_battle.wait_for()
        names = [pane.locator(".model-name").inner_text() for pane in panes]
        assert set(names) == OFFLINE_POOL
        for pane, name in zip(panes, names, strict=True):
            assert pane.locator(".badge--label").inner_text() == "baseline"
            gate = name.endswith("+gate")
            assert pane.locator(".badge--gate").count() == (1 if gate else 0)
            # Only the GATE contender streams tool steps, drawn into its pane's trajectory; with the
            # default `[battles] trajectory = "collapsed"` both panes show one line, the plain one's says so.
            trajectory = pane.locator('[data-role="trajectory"]')
            assert trajectory.is_visible()
            assert (trajectory.inner_text().strip() == "No tool steps") != gate
            assert trajectory.locator(".gate-step").count() == (11 if gate else 0)
        assert "is-winner" in (panes[0].get_attribute("class") or "")
        assert f"Model A was {names[0]}; Model B was {names[1]}" in page.locator("#verdict-note").inner_text()
        assert all(b.is_disabled() for b in page.locator("[data-choice]").all())

        # The vote is the database's record, not just the page's.
        with sqlite3.connect(arena_server.database) as db:
            (row,) = db.execute(
                "SELECT b.model_a, v.choice FROM votes v JOIN battles b ON b.id = v.battle_id"
            ).fetchall()
        assert row == (names[0], "a")

        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "arena-reveal-desktop.png"), full_page=True)

        new_battle.click()
        assert page.locator("#battle-form").is_visible()
        assert page.locator("#battle").is_hidden()
        assert page.get_by_label("Your question").input_value() == ""
        assert page.locator("#pane-a .answer").inner_text() == ""
        assert errors == []

    def test_server_refusal_is_shown_in_its_own_words(self, arena_server: ArenaServer, phone: Any) -> None:
        # Named and typed like a JPEG, so only the server (which reads the content) can refuse it.
        not_a_photo = b"\xff\xd8\xff\xe0 but not really a JPEG" * 4
        expected = httpx.post(
            arena_server.url + "/api/battles",
            trust_env=False,
            files={"image": ("photo.jpg", not_a_photo, "image/jpeg")},
            data={"prompt": "Where is this?"},
        )
        assert 400 <= expected.status_code < 500
        message = expected.json()["message"]

        page = phone
        page.goto(arena_server.url + "/")
        page.get_by_label("Drop a photo here").set_input_files(
            files=[{"name": "photo.jpg", "mimeType": "image/jpeg", "buffer": not_a_photo}]
        )
        page.get_by_role("button", name="Where was this taken? Explain your reasoning.").click()
        assert page.get_by_label("Your question").input_value() == "Where was this taken? Explain your reasoning."
        page.get_by_role("button", name="Start battle").click()
        alert = page.get_by_role("alert")
        alert.wait_for()
        assert alert.inner_text() == message
        assert page.locator("#battle").is_hidden()

        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "arena-refusal-phone.png"), full_page=True)

    def test_a_hebrew_refusal_reads_right_to_left(
        self, arena_server: ArenaServer, phone: Any, sample_photo: Path
    ) -> None:
        page = phone
        ask(page, arena_server.url, sample_photo, "מה הבירה של צרפת?")  # "What is the capital of France?": a quiz
        alert = page.get_by_role("alert")
        alert.wait_for()
        assert alert.inner_text() == REFUSALS["he"]
        # the sentence starts with the Latin "GeoArena", so only the language can say which way it reads
        assert (alert.get_attribute("lang"), alert.get_attribute("dir")) == ("he", "rtl")
        assert alert.evaluate("e => getComputedStyle(e).borderRightWidth") == "4px"  # its bar on the reading side
        page.screenshot(path=str(SCREENSHOTS / "arena-refusal-hebrew-phone.png"), full_page=True)

    def test_drop_a_photo_on_the_zone(self, arena_server: ArenaServer, desktop: Any, sample_photo: Path) -> None:
        page = desktop
        page.goto(arena_server.url + "/")
        drop(page, "notes.txt", "text/plain", b"not a photo")
        assert "not a photo we can read" in page.get_by_role("alert").inner_text()
        assert page.locator("#photo-preview").is_hidden()

        drop(page, sample_photo.name, "image/jpeg", sample_photo.read_bytes())
        assert page.locator("#form-error").is_hidden()
        preview = page.locator("#photo-preview")
        preview.wait_for()
        page.wait_for_function("() => document.querySelector('#photo-preview').naturalWidth > 0")
        assert sample_photo.name in page.locator("#dropzone-title").inner_text()

    def test_a_failed_side_cannot_be_voted_on(
        self, arena_with_a_dead_contender: ArenaServer, desktop: Any, sample_photo: Path
    ) -> None:
        page = desktop
        ask(page, arena_with_a_dead_contender.url, sample_photo, "Where was this taken? Explain your reasoning.")

        new_battle = page.get_by_role("button", name="New battle")
        new_battle.wait_for(timeout=ANSWER_TIMEOUT_MS)
        page.wait_for_function(
            "() => !document.querySelector('#pane-a[aria-busy=true], #pane-b[aria-busy=true]')",
            timeout=ANSWER_TIMEOUT_MS,
        )
        states = {side: page.locator(f"#pane-{side}").get_attribute("data-state") for side in "ab"}
        assert sorted(states.values()) == ["done", "error"]
        failed = next(side for side, state in states.items() if state == "error")
        status = page.locator(f"#pane-{failed} [data-role=status]").inner_text()
        assert status.startswith("Error: ") and len(status) > len("Error: ")
        note = page.locator("#verdict-note").inner_text()
        assert f"Model {failed.upper()} failed, so this battle cannot be voted on" in note
        assert all(b.is_disabled() for b in page.locator("[data-choice]").all())
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "arena-side-failed-desktop.png"), full_page=True)

        new_battle.click()
        assert page.locator("#battle-form").is_visible()


def drop(page: Any, name: str, mime: str, data: bytes) -> None:
    """Drop a file on the drop zone the way a browser does: a `drop` event
    carrying a DataTransfer."""
    transfer = page.evaluate_handle(
        """([name, mime, b64]) => {
            const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], name, { type: mime }));
            return transfer;
        }""",
        [name, mime, base64.b64encode(data).decode()],
    )
    page.dispatch_event("#dropzone", "dragenter", {"dataTransfer": transfer})
    page.dispatch_event("#dropzone", "drop", {"dataTransfer": transfer})


def ask(page: Any, url: str, photo: Path, question: str) -> None:
    """Open the arena, give it `photo` and `question`, and start the battle."""
    page.goto(url + "/")
    page.get_by_label("Drop a photo here").set_input_files(photo)
    page.get_by_label("Your question").fill(question)
    page.get_by_role("button", name="Start battle").click()
