"""Issue 17 item 4: the battle's photo opens full size, with zoom and pan from
the keyboard, the mouse and two fingers, in an accessible modal dialog; and
every accepted type (JPEG, PNG, WebP, HEIC) is shown through the stored JPEG,
in real Chromium against `arena serve` with paced loopback contenders."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.conftest import SCREENSHOTS
from tests.web.axe import assert_accessible
from tests.web.battles import new_page, start_battle, wait_until_voting_opens
from tests.web.conftest import ArenaServer

pytestmark = pytest.mark.browser


def scale_of(page: Any) -> float:
    return float(page.locator("#photo-viewer").get_attribute("data-scale"))


def pan_of(page: Any) -> tuple[int, int]:
    x, y = page.locator("#photo-viewer").get_attribute("data-pan").split(",")
    return int(x), int(y)


def as_format(photo: Path, fmt: str, tmp_path: Path) -> Path:
    """The sample photo re-saved as `fmt` (HEIC through pillow-heif, as a phone would send it)."""
    image = Image.open(photo).convert("RGB")
    out = io.BytesIO()
    if fmt == "HEIF":
        pillow_heif = pytest.importorskip("pillow_heif")
        pillow_heif.from_pillow(image).save(out, format="HEIF")
        suffix = ".heic"
    else:
        image.save(out, format=fmt)
        suffix = "." + fmt.lower()
    path = tmp_path / f"photo{suffix}"
    path.write_bytes(out.getvalue())
    return path


class TestPhotoViewer:
    def test_keyboard_and_mouse_on_the_desktop(
        self, paced_arena: ArenaServer, chromium: Any, sample_photo: Path
    ) -> None:
        context, page, errors = new_page(chromium, "desktop")
        start_battle(page, paced_arena.url, sample_photo)
        wait_until_voting_opens(page)
        opener = page.get_by_role("button", name="Open the photo full size (zoom and pan)")
        opener.focus()
        page.keyboard.press("Enter")
        dialog = page.get_by_role("dialog", name="The photo")
        dialog.wait_for()
        assert page.evaluate("() => document.getElementById('photo-viewer').matches(':modal')")
        full = page.locator("#viewer-image")
        assert full.get_attribute("src").startswith("/images/")
        # full size: much larger than the 120x88 thumbnail, and the photo's own pixels
        box = full.bounding_box()
        assert box is not None and box["width"] > 600
        natural = page.evaluate("() => document.getElementById('viewer-image').naturalWidth")
        assert natural >= 1000
        assert page.evaluate("() => document.activeElement.id") == "viewer-stage"

        page.keyboard.press("+")
        page.keyboard.press("+")
        assert scale_of(page) == pytest.approx(1.5625, abs=0.001)
        assert page.locator("#viewer-scale").inner_text() == "156%"
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowDown")
        assert pan_of(page) == (-60, -60)
        page.keyboard.press("1")  # inside the viewer a digit is no vote
        assert page.locator('[data-choice="a"]').is_enabled()
        page.screenshot(path=str(SCREENSHOTS / "photo-viewer-zoomed-desktop.png"))
        assert_accessible(page, "photo viewer, zoomed, desktop")
        page.keyboard.press("0")
        assert scale_of(page) == 1 and pan_of(page) == (0, 0)

        # the wheel zooms about the pointer; a drag moves the zoomed photo
        stage = page.locator("#viewer-stage").bounding_box()
        assert stage is not None
        cx, cy = stage["x"] + stage["width"] / 2, stage["y"] + stage["height"] / 2
        page.mouse.move(cx + 100, cy)
        page.mouse.wheel(0, -100)
        page.mouse.wheel(0, -100)
        assert scale_of(page) == pytest.approx(1.5625, abs=0.001)
        before = pan_of(page)
        page.mouse.down()
        page.mouse.move(cx + 40, cy + 30, steps=4)
        page.mouse.up()
        after = pan_of(page)
        assert after[0] < before[0]  # dragged left
        page.get_by_role("button", name="Zoom out").click()
        assert scale_of(page) == pytest.approx(1.25, abs=0.001)

        page.keyboard.press("Escape")
        dialog.wait_for(state="hidden")
        assert page.evaluate("() => document.activeElement.id") == "photo-open"  # focus returns
        page.keyboard.press("1")  # and now the key votes again
        page.get_by_role("button", name="New battle").wait_for()
        assert errors == []
        context.close()

    def test_two_fingers_on_a_phone(self, paced_arena: ArenaServer, chromium: Any, sample_photo: Path) -> None:
        context, page, errors = new_page(chromium, "phone")
        start_battle(page, paced_arena.url, sample_photo)
        page.locator("#photo-open").tap()
        page.get_by_role("dialog", name="The photo").wait_for()
        viewport = page.viewport_size
        dialog_box = page.locator("#photo-viewer").bounding_box()
        assert dialog_box is not None and dialog_box["width"] == pytest.approx(viewport["width"], abs=1)
        assert page.locator(".viewer__keys-touch").is_visible()
        page.get_by_role("button", name="Zoom in").tap()  # the buttons answer a finger
        assert scale_of(page) == pytest.approx(1.25, abs=0.001)
        page.get_by_role("button", name="Fit").tap()
        assert scale_of(page) == 1
        stage = page.locator("#viewer-stage").bounding_box()
        assert stage is not None
        cx, cy = stage["x"] + stage["width"] / 2, stage["y"] + stage["height"] / 2
        # a pinch: two touch pointers moving apart, as Chromium reports them (touch-action: none)
        cdp = context.new_cdp_session(page)

        def touch(kind: str, spread: float) -> None:
            points = (
                []
                if kind == "touchEnd"
                else [
                    {"x": cx - spread, "y": cy, "id": 1},
                    {"x": cx + spread, "y": cy, "id": 2},
                ]
            )
            cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

        touch("touchStart", 40)
        for spread in (60, 80, 100, 120):
            touch("touchMove", spread)
        touch("touchEnd", 0)
        assert scale_of(page) == pytest.approx(3.0, rel=0.05)
        page.screenshot(path=str(SCREENSHOTS / "photo-viewer-pinched-phone.png"))
        assert_accessible(page, "photo viewer, pinched, phone")
        # one finger drags the zoomed photo
        cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": cx, "y": cy, "id": 3}]})
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": cx - 50, "y": cy, "id": 3}]})
        cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
        assert pan_of(page)[0] < 0
        # (a click: after the raw CDP touches above, Playwright's own tap is not delivered)
        page.get_by_role("button", name="Close").click()
        page.get_by_role("dialog", name="The photo").wait_for(state="hidden")
        assert errors == []
        context.close()

    @pytest.mark.parametrize("fmt", ["PNG", "WEBP", "HEIF"])
    def test_every_accepted_type_shows_through_the_stored_jpeg(
        self, paced_arena: ArenaServer, chromium: Any, sample_photo: Path, tmp_path: Path, fmt: str
    ) -> None:
        upload = as_format(sample_photo, fmt, tmp_path)
        context, page, errors = new_page(chromium, "desktop")
        start_battle(page, paced_arena.url, upload)
        photo = page.locator("#question-photo")
        photo.wait_for()
        page.wait_for_function("() => document.getElementById('question-photo').complete")
        assert photo.get_attribute("src").startswith("/images/")
        assert page.evaluate("() => document.getElementById('question-photo').naturalWidth") > 0
        assert photo.is_visible()
        if fmt == "HEIF":
            page.locator("#photo-open").click()
            page.wait_for_function("() => document.getElementById('viewer-image').naturalWidth > 0")
            page.screenshot(path=str(SCREENSHOTS / "photo-viewer-heic-desktop.png"))
        assert errors == []
        context.close()
