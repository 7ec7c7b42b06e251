"""Issue 17: `/terms` says what is stored, what is published and how to have a
photo removed; the upload form links to it; the operator's own Markdown file
(ARENA_TERMS_FILE) replaces the text, through the answers' sanitiser."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli import run_in
from tests.web.conftest import ArenaServer, serve_arena
from tests.web.test_arena_page import offline_settings, page_client, parse

OPERATOR_TERMS = (
    "# Our arena's terms\n\nAsk **removals@example.org** to take a photo down.\n\n"
    "<script>alert('x')</script>\n\n[click](javascript:alert(1))\n"
)


class TestTermsPage:
    async def test_the_built_in_text_covers_storage_publication_and_removal(self, tmp_path: Path) -> None:
        async with page_client(offline_settings(tmp_path)) as client:
            response = await client.get("/terms")
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
        headings = [h.text for h in parse(response.text).find(tag="h2")]
        assert headings == ["What is stored", "What is published", "Removing a photo"]
        assert "metadata removed" in response.text and "clean_battle" in response.text

    async def test_the_operators_file_replaces_it_sanitised(self, tmp_path: Path) -> None:
        terms = tmp_path / "terms.md"
        terms.write_text(OPERATOR_TERMS)
        async with page_client(offline_settings(tmp_path, terms_file=terms)) as client:
            first = await client.get("/terms")
            terms.write_text(OPERATOR_TERMS.replace("removals@", "photos@"))
            edited = await client.get("/terms")  # read on each request: no restart needed
        assert "<h1>Our arena&#x27;s terms</h1>" in first.text or "<h1>Our arena's terms</h1>" in first.text
        assert "<strong>removals@example.org</strong>" in first.text
        assert "What is stored" not in first.text
        main = first.text.split("<main", 1)[1].split("</main>", 1)[0]
        assert "<script" not in main and "&lt;script&gt;" in main  # shown as text, never run
        assert 'href="javascript' not in main
        assert "photos@example.org" in edited.text

    async def test_the_upload_form_and_every_footer_link_to_it(self, tmp_path: Path) -> None:
        async with page_client(offline_settings(tmp_path)) as client:
            arena = (await client.get("/")).text
            terms = (await client.get("/terms")).text
        form = arena.split('<form id="battle-form"', 1)[1].split("</form>", 1)[0]
        assert '<a href="/terms">what is stored and published, and how to have a photo removed</a>' in form
        for page in (arena, terms):  # the footer of every page (base.html)
            footer = page.split('<footer class="site-footer">', 1)[1]
            assert '<a href="/terms">Terms and your data</a>' in footer

    async def test_a_terms_file_gone_after_start_up_is_a_503_page(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        terms = tmp_path / "terms.md"
        terms.write_text(OPERATOR_TERMS)
        async with page_client(offline_settings(tmp_path, terms_file=terms)) as client:
            assert (await client.get("/terms")).status_code == 200
            terms.unlink()  # a volume unmounted, a deploy that moved it
            gone = await client.get("/terms")
            terms.write_bytes(b"\xff\xfe not UTF-8")
            garbled = await client.get("/terms")
        for response in (gone, garbled):
            assert response.status_code == 503 and response.headers["content-type"].startswith("text/html")
            assert response.headers["retry-after"] == "300"
            assert response.headers["x-content-type-options"] == "nosniff"
            assert "content-security-policy" in response.headers
            main = response.text.split("<main", 1)[1].split("</main>", 1)[0]
            assert "The terms cannot be shown right now" in main and "What is stored" not in main
        assert any("ARENA_TERMS_FILE" in r.getMessage() and r.levelname == "ERROR" for r in caplog.records)

    def test_serve_refuses_an_unreadable_terms_file(self, tmp_path: Path) -> None:
        result = run_in(
            tmp_path,
            "serve",
            "--port",
            "1",
            env={"ARENA_DATA_DIR": str(tmp_path / "data"), "ARENA_TERMS_FILE": "missing-terms.md"},
        )
        assert result.returncode == 1
        assert result.stderr.strip() == (
            f"arena: ARENA_TERMS_FILE={tmp_path / 'missing-terms.md'} cannot be read as UTF-8 text (FileNotFoundError)"
        )
        assert not (tmp_path / "data").exists()


@pytest.fixture(scope="module")
def arena_with_own_terms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArenaServer]:
    base = tmp_path_factory.mktemp("arena-terms")
    terms = base / "terms.md"
    terms.write_text(OPERATOR_TERMS)
    with serve_arena(base, base / "no-pool.toml", env_extra={"ARENA_TERMS_FILE": str(terms)}) as server:
        yield server


@pytest.mark.browser
class TestTermsInBrowser:
    @pytest.mark.parametrize("viewport", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
    def test_the_form_links_to_the_operators_terms(
        self, arena_with_own_terms: ArenaServer, chromium: Any, viewport: tuple[int, int]
    ) -> None:
        width, height = viewport
        context = chromium.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(arena_with_own_terms.url + "/")
        link = page.locator("#battle-form").get_by_role("link", name="what is stored and published")
        assert link.is_visible()
        link.click()
        page.wait_for_url("**/terms")
        assert page.get_by_role("heading", level=1).inner_text() == "Our arena's terms"
        assert "removals@example.org" in page.locator("main").inner_text()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        assert dialogs == []  # the operator's <script> never ran
        context.close()
