"""static/trajectory.js in headless Chromium: steps render as a collapsible
timeline with thumbnails, and model text never becomes HTML."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from arena.app import create_app
from arena.config import Settings
from arena.contenders.gate.registry import ImageRegistry
from arena.db.migrate import upgrade
from arena.geo.gazetteer import load_gazetteer
from arena.images.store import LocalImageStore
from arena.vision.ops import crop, super_resolution
from tests.conftest import SCREENSHOTS
from tests.contenders.gate.scripted_model import Call, ScriptedModelServer, Turn
from tests.photos import SAMPLE, photo
from tests.servers import serve_in_thread
from tests.servers.openai_compatible import OpenAICompatibleServer

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
PAGE = """<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="/static/arena.css">
<script src="/static/trajectory.js"></script></head>
<body><main style="max-width:640px;margin:1rem auto"><article class="pane">
<div class="trajectory" id="t"></div><div class="answer" id="answer"></div></article></main></body></html>"""
HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script> **bold**'


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    store = LocalImageStore(tmp_path_factory.mktemp("images"))
    registry = ImageRegistry(photo("level1-1.jpg"), store)
    car = registry.add(super_resolution(registry.get("img_0").image, [0.6, 0.5, 0.9, 0.8], 2), "2x car")
    fence = registry.add(crop(registry.get("img_0").image, [0.0, 0.55, 0.5, 0.9]), "fence")

    async def image(request: Request) -> Response:
        try:
            return Response(store.get(request.path_params["sha"]), media_type="image/jpeg")
        except KeyError:
            return Response(status_code=404)

    async def index(request: Request) -> Response:
        return HTMLResponse(PAGE)

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/images/{sha}", image),
            Mount("/static", StaticFiles(directory=ROOT / "static")),
        ]
    )
    steps = [
        {
            "side": "a",
            "tool": "super_resolution",
            "args": {"image": "img_0", "box": [0.6, 0.5, 0.9, 0.8], "factor": 2},
            "observation": f"Produced {car.describe()}.",
            "thought": "The number plate could tell the country.",
            "image_refs": [car.sha256],
            "ok": True,
        },
        {
            "side": "a",
            "tool": "crop",
            "args": {"box": [0, 0, 640, 300]},
            "observation": "box [0, 0, 640, 300]: coordinates are fractions of the image between 0 and 1, not pixels",
            "thought": "",
            "image_refs": [],
            "ok": False,
        },
        {
            "side": "a",
            "tool": "crop",
            "args": {"box": [0.0, 0.55, 0.5, 0.9]},
            "observation": f"Produced {fence.describe()}.",
            "thought": "Look at the road markings.",
            "image_refs": [fence.sha256, "../../etc/passwd"],
            "ok": True,
        },
        {
            "side": "a",
            "tool": "visit",
            "args": {"url": "https://example.org/<b>x</b>"},
            "observation": HOSTILE,
            "thought": HOSTILE,
            "image_refs": [],
            "ok": True,
        },
    ]
    with serve_in_thread(app) as url:
        yield url, steps


class TestTrajectoryTimeline:
    def test_renders_steps_thumbnails_and_only_text(
        self, site: tuple[str, list[dict[str, Any]]], chromium: Any
    ) -> None:
        url, steps = site
        page = chromium.new_page(viewport={"width": 800, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url + "/")
        for step in steps:
            # as `[battles] trajectory = "open"` shows it (tests/web covers the collapsed default)
            page.evaluate(
                "(step) => window.GeoArenaTrajectory.renderStep(document.getElementById('t'), step, {open: true})", step
            )
        assert page.locator(".gate-trajectory__summary").inner_text() == "Tool use: 4 steps (1 failed)"
        assert page.locator(".gate-step").count() == 4
        assert page.locator(".gate-step--failed .gate-step__tool").inner_text() == "crop"
        # thumbnails: only valid digests become images, and they load from /images/{sha}
        thumbs = page.locator(".gate-step__thumb img")
        assert thumbs.count() == 2
        page.wait_for_function(
            "() => [...document.querySelectorAll('.gate-step__thumb img')].every(i => i.complete && i.naturalWidth > 0)"
        )
        assert thumbs.nth(0).get_attribute("src") == f"/images/{steps[0]['image_refs'][0]}"
        # details are collapsed until clicked
        first = page.locator(".gate-step__details").nth(0)
        assert not first.evaluate("d => d.open")
        first.locator("summary").click()
        assert first.evaluate("d => d.open")
        assert "The number plate could tell the country." in first.inner_text()
        # hostile text stays text: no element was created from it, nothing ran
        hostile = page.locator(".gate-step__details").nth(3)
        hostile.locator("summary").click()
        assert HOSTILE in hostile.locator(".gate-step__pre").nth(1).inner_text()
        assert page.evaluate("() => window.pwned") is None
        assert page.locator("#t script, #t b, #t img:not(.gate-step__thumb img)").count() == 0
        assert errors == []
        shots = SCREENSHOTS
        shots.mkdir(parents=True, exist_ok=True)
        page.locator(".pane").screenshot(path=str(shots / "gate-trajectory.png"))
        page.close()


@pytest.fixture(scope="module")
def gate_arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ScriptedModelServer]]:
    """The real app with a GATE contender (scripted loopback model) and a plain one."""
    tmp = tmp_path_factory.mktemp("gate-arena")
    # as `arena serve` does at start-up: the answer names Tokyo, and a cold place-name index would
    # hold its `done` for 7-15 s (far longer on a loaded machine)
    load_gazetteer()
    scripted = ScriptedModelServer(
        [
            Turn(
                "Let me read the plate of the car.",
                [Call("super_resolution", '{"box": [0.6, 0.5, 0.9, 0.8], "factor": 2}')],
                delay=0.02,
            ),
            Turn("The road markings next.", [Call("crop", '{"box": [0.0, 0.75, 0.6, 1.0]}')], delay=0.02),
            Turn("", [Call("pixel_analysis", '{"box": [0.3, 0.1, 0.7, 0.5]}')]),
            Turn("Final answer: **Tokyo, Japan**\n\n- Japanese number plate\n- orange centre line\n", delay=0.02),
        ]
    )
    plain = OpenAICompatibleServer()
    with serve_in_thread(scripted.app) as gate_url, serve_in_thread(plain.app) as plain_url:
        pool = tmp / "arena.toml"
        pool.write_text(
            f'[[contenders]]\nname = "vlm+gate"\nprovider = "openai"\nbase_url = "{gate_url}/v1"\n'
            'model = "scripted"\ngate = true\ntimeout = 20\n\n'
            f'[[contenders]]\nname = "vlm"\nprovider = "openai"\nbase_url = "{plain_url}/v1"\n'
            'model = "echo-vlm"\ntimeout = 20\n\n[tools]\ncode = false\n\n'
            '[battles]\ntrajectory = "open"\n'
        )
        database = f"sqlite:///{tmp / 'arena.db'}"
        upgrade(database)
        settings = Settings(
            env="test",
            data_dir=tmp / "data",
            database_url=database,
            config=pool,
            secret_key="test-secret-key-0123456789",
            battle_timeout=30,
        )
        with serve_in_thread(create_app(settings)) as url:
            yield url, scripted


class TestGateBattleInTheArena:
    def test_tool_steps_show_in_the_gate_pane(self, gate_arena: tuple[str, ScriptedModelServer], chromium: Any) -> None:
        url, scripted = gate_arena
        page = chromium.new_page(viewport={"width": 1280, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url + "/")
        page.get_by_label("Drop a photo here").set_input_files(str(SAMPLE / "level1-1.jpg"))
        page.get_by_label("Your question").fill("Where was this photo taken?")
        page.get_by_role("button", name="Start battle").click()
        page.wait_for_function(
            "() => ['a', 'b'].every(s => document.querySelector(`#pane-${s}`).dataset.state === 'done')", timeout=60_000
        )
        panes = page.locator(".pane:has(.gate-step)")
        assert panes.count() == 1  # only the GATE contender used tools
        pane = panes.first
        assert pane.locator(".gate-trajectory__summary").inner_text() == "Tool use: 3 steps"
        assert [t.inner_text() for t in pane.locator(".gate-step__tool").all()] == [
            "super_resolution",
            "crop",
            "pixel_analysis",
        ]
        page.wait_for_function(
            "() => [...document.querySelectorAll('.gate-step__thumb img')].every(i => i.complete && i.naturalWidth > 0)"
        )
        assert pane.locator(".gate-step__thumb img").count() == 2
        assert pane.locator(".answer strong").inner_text() == "Tokyo, Japan"
        pane.locator(".gate-step__details summary").nth(2).click()
        assert "vegetation" in pane.locator(".gate-step__details").nth(2).inner_text()
        assert errors == []
        shots = SCREENSHOTS
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "gate-battle-desktop.png"), full_page=True)
        page.close()
