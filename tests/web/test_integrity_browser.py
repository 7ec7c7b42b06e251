"""Integrity in a real browser: another site's form cannot start a battle, and
the arena page solves its proof-of-work challenge by itself."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.servers import serve_in_thread
from tests.web.conftest import serve_arena

pytestmark = pytest.mark.browser

BASELINES = (
    '[[contenders]]\nname = "ocr-geolocator"\nprovider = "baseline"\nmodel = "ocr-geolocator"\nlabel = "baseline"\n\n'
    '[[contenders]]\nname = "ocr-geolocator+gate"\nprovider = "baseline"\nmodel = "ocr-geolocator"\ngate = true\n'
    'label = "baseline"\n\n'
)


@pytest.fixture(scope="module")
def challenged_arena(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("arena-challenge")
    pool = base / "arena.toml"
    pool.write_text(BASELINES + '[integrity]\nchallenge = "always"\nchallenge_bits = 16\n')
    with serve_arena(base, pool) as server:
        yield server


def battles_in(database: Path) -> int:
    with sqlite3.connect(database) as db:
        return int(db.execute("SELECT count(*) FROM battles").fetchone()[0])


class TestCrossSiteForm:
    def test_another_sites_form_is_refused(self, chromium: Any, challenged_arena: Any) -> None:
        target = challenged_arena.url + "/api/battles"
        evil = Starlette(
            routes=[
                Route(
                    "/",
                    lambda request: HTMLResponse(
                        f'<form id="f" method="post" enctype="multipart/form-data" action="{target}">'
                        '<input name="prompt" value="Where was this taken?"></form>'
                        '<script>document.getElementById("f").submit()</script>'
                    ),
                )
            ]
        )
        before = battles_in(challenged_arena.database)
        with serve_in_thread(evil) as evil_url:
            context = chromium.new_context()
            page = context.new_page()
            responses: list[Any] = []
            page.on("response", lambda r: responses.append(r) if r.url == target else None)
            # localhost and 127.0.0.1 are different sites to the browser
            page.goto(evil_url.replace("127.0.0.1", "localhost") + "/")
            page.wait_for_url(target)
            page.wait_for_load_state()
            assert responses and responses[0].status == 403
            assert responses[0].request.headers.get("origin", "").startswith("http://localhost:")
            body = page.inner_text("body")
            assert '"error":"cross_site"' in body.replace(" ", "") and "refused because" in body
            context.close()
        assert battles_in(challenged_arena.database) == before


class TestChallengeInBrowser:
    def test_the_page_solves_it_and_the_battle_starts(
        self, chromium: Any, challenged_arena: Any, sample_photo: Path
    ) -> None:
        with sqlite3.connect(challenged_arena.database) as db:
            assert db.execute("SELECT count(*) FROM spent_challenges").fetchone()[0] == 0
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(30_000)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        created: list[Any] = []
        page.on("response", lambda r: created.append(r) if r.url.endswith("/api/battles") else None)
        page.goto(challenged_arena.url + "/")
        page.get_by_label("Drop a photo here").set_input_files(sample_photo)
        page.locator("#photo-preview").wait_for(state="visible", timeout=10_000)
        page.get_by_label("Your question").fill("Which country is this?")
        page.get_by_role("button", name="Start battle").click()
        page.locator("#battle").wait_for(state="visible")
        assert errors == []
        assert created and created[0].status == 201
        # "always": the server took the battle only with a solved, now spent, challenge
        with sqlite3.connect(challenged_arena.database) as db:
            assert db.execute("SELECT count(*) FROM spent_challenges").fetchone()[0] >= 1
        context.close()
