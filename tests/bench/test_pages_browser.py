"""The leaderboard's benchmark section and the `/review` page in headless
Chromium, on data made the real way: `arena bench` against loopback models
and a loopback judge, `arena judge`, `arena rank`, a reviewer link.
Screenshots land in `screenshots/` (ignored by git) for a person to look at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arena.app import create_app
from arena.cli import main
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.session import make_engine, make_sessionmaker
from tests.bench.conftest import PARIS_ROWS, write_dataset
from tests.judge.seed import seed
from tests.servers import serve_in_thread
from tests.web.axe import assert_accessible

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
from tests.conftest import SCREENSHOTS  # noqa: E402


def write_pool(path: Path, models_url: str, judge_url: str) -> None:
    lines = []
    for name, model in (("geo-large", "echo-one"), ("geo-small", "echo-two")):
        lines += [
            "[[contenders]]",
            f'name = "{name}"',
            'provider = "openai"',
            f'base_url = "{models_url}"',
            f'model = "{model}"',
            "timeout = 10",
            "",
        ]
    lines += [
        "[[contenders]]",
        'name = "vision-judge"',
        'provider = "openai"',
        f'base_url = "{judge_url}"',
        'model = "voter-vision"',
        "weight = 0",
        "timeout = 10",
        "",
    ]
    lines += [
        "[judge]",
        'name = "fair-judge"',
        'provider = "openai"',
        f'base_url = "{judge_url}"',
        'model = "grader-fair"',
        "timeout = 10",
        "",
    ]
    path.write_text("\n".join(lines))


@pytest.fixture(scope="module")
def arena(tmp_path_factory, openai_server, judge_server):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("pages")
    url = f"sqlite:///{tmp / 'arena.db'}"
    upgrade(url)
    write_pool(tmp / "arena.toml", openai_server[0], judge_server[0])
    env = {"ARENA_CONFIG": str(tmp / "arena.toml"), "ARENA_DATABASE_URL": url, "ARENA_DATA_DIR": str(tmp / "data")}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        engine = make_engine(url)
        with make_sessionmaker(engine)() as session:
            seed(session, tmp / "data")
        engine.dispose()
        dataset = write_dataset(tmp / "ds", PARIS_ROWS, name="geobrowse-mini.jsonl")
        assert main(["bench", "--dataset", str(dataset), "--contenders", "geo-large,geo-small"]) == 0
        assert main(["judge", "--judge", "vision-judge"]) == 0
        assert main(["rank", "--rounds", "10"]) == 0
        settings = Settings(
            env="test",
            data_dir=tmp / "data",
            database_url=url,
            config=tmp / "arena.toml",
            secret_key="browser-test-secret",
        )
        with serve_in_thread(create_app(settings)) as base:
            yield base, tmp
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def open_page(chromium, url: str, *, phone: bool = False):  # type: ignore[no-untyped-def]
    viewport = {"width": 390, "height": 844} if phone else {"width": 1280, "height": 900}
    context = chromium.new_context(viewport=viewport, is_mobile=phone)
    page = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return context, page, requests, errors


class TestBenchSection:
    def test_accuracy_beside_the_rating_and_the_judge(self, arena, chromium):
        base, _ = arena
        context, page, requests, errors = open_page(chromium, base + "/leaderboard")
        try:
            page.wait_for_selector("#bench-boards table")
            boards = page.locator(".lb-bench__board")
            assert boards.count() == 2
            first = boards.nth(0)
            assert "LLM judge fair-judge" in first.locator("h3").inner_text()
            row = first.locator("tbody tr", has_text="geo-large")
            cells = row.locator("td").all_inner_texts()
            assert cells[1].isdigit()  # the preference rating beside the accuracy
            assert cells[2] == "33.3% (1/3)" and "%" in cells[3]
            assert "Judge vs offline grader: 100.0% agreement on 6 runs" in first.inner_text()
            judge = page.locator(".lb-bench__judge")
            assert (
                "Model judge vision-judge" in judge.inner_text() and "position consistency 100.0%" in judge.inner_text()
            )
            assert not errors, errors
            assert all(r.startswith(base) for r in requests), [r for r in requests if not r.startswith(base)]
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.locator("#bench").screenshot(path=str(SCREENSHOTS / "leaderboard-bench.png"))
            assert_accessible(page, "/leaderboard with benchmark results, desktop")
        finally:
            context.close()

    def test_phone_width_scrolls_the_table_not_the_page(self, arena, chromium):
        base, _ = arena
        context, page, _, errors = open_page(chromium, base + "/leaderboard", phone=True)
        try:
            page.wait_for_selector("#bench-boards table")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390 + 1, width
            assert not errors, errors
            assert_accessible(page, "/leaderboard with benchmark results, phone")
        finally:
            context.close()


class TestReviewPage:
    def test_a_reviewer_revotes_without_javascript(self, arena, chromium, capsys):
        base, _ = arena  # the fixture's environment points the command at the served database
        assert main(["reviewers", "add", "alice", "--base-url", base]) == 0
        link = capsys.readouterr().out.splitlines()[0]
        context = chromium.new_context(viewport={"width": 1280, "height": 1000}, java_script_enabled=False)
        page = context.new_page()
        try:
            page.goto(link)
            assert page.locator("#review-prompt").inner_text() == "Question: Where was this photo taken?"
            assert page.locator(".review__photo").evaluate("img => img.naturalWidth") > 0
            assert "geo-large" not in page.content()
            assert page.locator(".review__meta").inner_text().endswith("5 battles left")
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "review.png"), full_page=True)
            page.get_by_role("button", name="Answer 1 is better").click()
            page.wait_for_load_state()
            assert page.locator(".review__meta").inner_text().endswith("4 battles left")
        finally:
            context.close()

    @pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
    def test_the_review_page_passes_axe(self, arena, chromium, capsys, phone):
        base, _ = arena
        assert main(["reviewers", "add", f"axe-{int(phone)}", "--base-url", base]) == 0
        link = capsys.readouterr().out.splitlines()[0]
        context, page, _, errors = open_page(chromium, link, phone=phone)
        try:
            assert page.locator("#review-prompt").count() == 1
            assert not errors, errors
            page.screenshot(path=str(SCREENSHOTS / f"review-{'phone' if phone else 'desktop'}.png"), full_page=True)
            assert_accessible(page, f"/review, {'phone' if phone else 'desktop'}")
        finally:
            context.close()
