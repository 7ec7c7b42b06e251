"""The arena page as served by the real app: its context, its limits, and
that everything it loads comes from this server."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import fields
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.app import create_app
from arena.config import Settings
from arena.web.pages import EXAMPLE_PROMPTS, ArenaPage, accepted_image_types

ROOT = Path(__file__).resolve().parents[2]


def offline_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """An arena with the offline pool (no pool file) and its own data dir."""
    return Settings(
        env="test",
        data_dir=tmp_path / "data",
        config=tmp_path / "no-pool.toml",
        database_url=f"sqlite:///{tmp_path / 'arena.db'}",
        secret_key="test-secret",
        **overrides,
    )


@asynccontextmanager
async def page_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


@pytest.fixture
async def offline_client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with page_client(offline_settings(tmp_path)) as client:
        yield client


class TestArenaPage:
    async def test_renders_the_page_context(self, offline_client: httpx.AsyncClient) -> None:
        response = await offline_client.get("/")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        page = parse(response.text)

        examples = [el.text for el in page.find(attr="data-example")]
        assert examples == list(EXAMPLE_PROMPTS)
        assert any("Explain your reasoning" in e for e in examples)

        (arena,) = page.find(id="arena")
        assert int(arena.attrs["data-max-bytes"]) == 15 * 1024 * 1024
        assert arena.attrs["data-accepted"].split(",") == list(accepted_image_types())
        (picker,) = page.find(id="photo-input")
        assert picker.attrs["type"] == "file"
        assert picker.attrs["accept"].split(",") == list(accepted_image_types())
        assert "up to 15 MB" in response.text
        assert "drawn from 2 contenders" in " ".join(response.text.split())

    async def test_limits_follow_the_settings(self, tmp_path: Path) -> None:
        settings = offline_settings(tmp_path, max_upload_bytes=5 * 1024 * 1024, max_prompt_chars=300)
        async with page_client(settings) as client:
            page = parse((await client.get("/")).text)
            (arena,) = page.find(id="arena")
            assert arena.attrs["data-max-bytes"] == str(5 * 1024 * 1024)
            assert arena.attrs["data-max-mb"] == "5"
            (prompt,) = page.find(id="prompt")
            assert prompt.attrs["maxlength"] == "300"

    async def test_vote_buttons_start_disabled(self, offline_client: httpx.AsyncClient) -> None:
        page = parse((await offline_client.get("/")).text)
        buttons = page.find(attr="data-choice")
        assert [b.attrs["data-choice"] for b in buttons] == ["a", "b", "tie", "both_bad"]
        assert all("disabled" in b.attrs for b in buttons)
        # the trailing digit is the button's key, in an aria-hidden <kbd> (issue 17)
        assert [b.text for b in buttons] == ["←A is better1", "B is better→2", "Tie3", "Both are bad4"]
        assert [b.attrs["aria-keyshortcuts"] for b in buttons] == ["1 A", "2 B", "3 T", "4 X"]

    async def test_nav_marks_the_current_page(self, offline_client: httpx.AsyncClient) -> None:
        page = parse((await offline_client.get("/")).text)
        current = [a for a in page.find(tag="a") if a.attrs.get("aria-current") == "page"]
        assert [(a.attrs["href"], a.text) for a in current] == [("/", "Arena")]
        assert {a.attrs["href"] for a in page.find(tag="a")} >= {"/", "/leaderboard"}

    async def test_static_assets_are_local(self, offline_client: httpx.AsyncClient) -> None:
        page = parse((await offline_client.get("/")).text)
        assets = [el.attrs["src"] for el in page.find(tag="script") if el.attrs.get("src")]
        assets += [el.attrs["href"] for el in page.find(tag="link")]
        assets += [el.attrs["src"] for el in page.find(tag="img") if el.attrs.get("src")]
        assert {"/static/arena.css", "/static/arena.js", "/static/trajectory.js"} <= set(assets)
        for url in assets:
            assert url.startswith("/") and not url.startswith("//"), f"not served locally: {url}"
        for url in set(assets):
            response = await offline_client.get(url)
            assert response.status_code == 200, url
        css = (await offline_client.get("/static/arena.css")).text
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", css), "the stylesheet loads something remote"
        assert "@import" not in css


class TestArenaPageContext:
    def test_every_field_has_help_and_reaches_the_template(self) -> None:
        template = (ROOT / "templates" / "arena.html").read_text()
        help_texts = ArenaPage.help()
        for f in fields(ArenaPage):
            assert help_texts[f.name].strip(), f"{f.name} has no help text"
            assert f"page.{f.name}" in template, f"arena.html never uses page.{f.name}"

    def test_upload_limit_in_megabytes(self) -> None:
        page = ArenaPage(EXAMPLE_PROMPTS, 15 * 1024 * 1024, 2000, ("image/jpeg",), "JPEG", 2)
        assert page.max_upload_mb == "15"
        assert ArenaPage(EXAMPLE_PROMPTS, 1536 * 1024, 2000, ("image/jpeg",), "JPEG", 2).max_upload_mb == "1.5"


class TestArenaScript:
    def test_only_server_sanitised_html_reaches_inner_html(self) -> None:
        script = (ROOT / "static" / "arena.js").read_text()
        assignments = re.findall(r"\.innerHTML\s*=\s*([^;]+);", script)
        assert assignments, "the answer panes are filled from the events' html"
        assert set(assignments) == {"data.html"}
        assert "insertAdjacentHTML" not in script and "outerHTML" not in script


# -- a small HTML reader ----------------------------------------------------------


class Element:
    def __init__(self, tag: str, attrs: dict[str, str]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.text = ""


class Page(HTMLParser):
    """Every element with its attributes and its direct and nested text."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[Element] = []
        self._open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.elements.append(element)
        if tag not in {"img", "input", "link", "meta", "br"}:
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            element = self._open.pop()
            element.text = " ".join(element.text.split())
            if element.tag == tag:
                break

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element.text += data

    def find(self, *, tag: str | None = None, id: str | None = None, attr: str | None = None) -> list[Element]:
        return [
            e
            for e in self.elements
            if (tag is None or e.tag == tag)
            and (id is None or e.attrs.get("id") == id)
            and (attr is None or attr in e.attrs)
        ]


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page
