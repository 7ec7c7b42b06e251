"""Helpers of the battle-page browser tests: a page at desktop or phone size,
and a battle started on it the way a person does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

QUESTION = "Which country is this? What clues give it away?"
BATTLE_PATH = re.compile(r"/battle/([0-9a-f]+)$")
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


def new_page(chromium: Any, size: str) -> tuple[Any, Any, list[str]]:
    phone = size == "phone"
    context = chromium.new_context(viewport=VIEWPORTS[size], is_mobile=phone, has_touch=phone)
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return context, page, errors


def start_battle(page: Any, url: str, photo: Path) -> str:
    page.goto(url + "/")
    page.get_by_label("Drop a photo here").set_input_files(photo)
    page.get_by_label("Your question").fill(QUESTION)
    page.get_by_role("button", name="Start battle").click()
    page.wait_for_url(BATTLE_PATH)
    match = BATTLE_PATH.search(page.url)
    assert match
    return match.group(1)


def wait_until_voting_opens(page: Any) -> None:
    page.wait_for_function("() => !document.querySelector('[data-choice=a]').disabled", timeout=60_000)
