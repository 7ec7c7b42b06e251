"""The leaderboard page in headless Chromium: 2 and 100 contenders, desktop
and phone, no request leaving the server, the toggle and the charts working.
Screenshots land in SCREENSHOTS (the system's temporary folder) for a person to look at."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from arena.answers.style import FEATURES
from arena.app import create_app
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.session import make_engine, make_sessionmaker
from arena.ratings.leaderboard import RankOptions, build_snapshot
from arena.ratings.snapshot import Snapshot, store_snapshot
from arena.ratings.vote_log import VoteLog
from arena.web.leaderboard import CSV_COLUMNS
from tests.conftest import SCREENSHOTS, SHARED
from tests.ratings.simulate import simulate
from tests.servers import serve_in_thread
from tests.web.axe import assert_accessible

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def snapshot_for(contenders: int, votes: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    a, b, y, fa, fb = simulate(
        rng.normal(0, 0.7, contenders), votes, rng, style_effect=np.array([0.4, 0.1, -0.1, -0.1, 0.05, 0.2])
    )
    names = [f"{'gpt-4o' if i == 0 else 'contender'}-{i:02d}{'+gate' if i % 3 == 0 else ''}" for i in range(contenders)]
    languages = {
        "language:en": np.flatnonzero(np.arange(votes) % 4 != 0),
        "language:ja": np.flatnonzero(np.arange(votes) % 40 == 0),
    }
    log = VoteLog(
        names, a, b, y, fa, fb, np.arange(votes, dtype=float), {n: n.endswith("+gate") for n in names}, languages
    )
    return build_snapshot(
        log, RankOptions(rounds=20, seed=seed), excluded={"flagged:identity_leak": 3, "side_failed": 1}
    )


def serve_with(tmp_path: Path, snapshot: dict[str, Any] | None):  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    upgrade(url)
    if snapshot is not None:
        store_snapshot(make_sessionmaker(make_engine(url)), snapshot)
    settings = Settings(
        env="test",
        data_dir=tmp_path / "data",
        database_url=url,
        config=tmp_path / "none.toml",
        secret_key="browser-test-secret",
    )
    return serve_in_thread(create_app(settings))


def open_page(chromium: Any, base: str, *, phone: bool = False) -> tuple[Any, Any, list[str], list[str]]:
    viewport = {"width": 390, "height": 844} if phone else {"width": 1280, "height": 900}
    context = chromium.new_context(viewport=viewport, is_mobile=phone, has_touch=phone)
    page = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(base + "/leaderboard")
    page.wait_for_load_state("networkidle")
    return context, page, requests, errors


class TestLeaderboardInBrowser:
    def test_hundred_contenders_on_desktop_and_phone(self, chromium, tmp_path):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        with serve_with(tmp_path, snapshot_for(100, 60_000, 1)) as base:
            context, page, requests, errors = open_page(chromium, base)
            assert errors == []
            assert all(u.startswith(base) for u in requests), [u for u in requests if not u.startswith(base)]
            assert page.locator("#lb-table tbody tr:visible").count() == 100
            assert page.locator("#lb-chart .lb-chart-row").count() == 100
            assert page.locator("#lb-heat rect").count() == 20 * 20
            first_plain = page.locator("#lb-table tbody tr:visible").first.inner_text()
            assert_accessible(page, "/leaderboard, 100 contenders, plain, desktop")
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-100-desktop.png"), full_page=False)
            page.click("button[data-view=style]")
            assert page.get_attribute("button[data-view=style]", "aria-pressed") == "true"
            assert page.locator("#lb-table").evaluate("t => t.classList.contains('lb-no-elo')")
            assert page.locator("#lb-table tbody tr:visible").first.inner_text() != first_plain
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-100-style-full.png"), full_page=True)
            assert_accessible(page, "/leaderboard, 100 contenders, style-adjusted, desktop")
            page.select_option("#lb-heat-size", "100")
            assert page.locator("#lb-heat rect").count() == 100 * 100
            page.select_option("#lb-cat", index=1)
            assert page.locator("#lb-cat-table tbody tr").count() >= 2
            assert page.locator("#lb-coef tbody tr").count() == len(FEATURES)
            context.close()

            context, page, _, errors = open_page(chromium, base, phone=True)
            assert errors == []
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"the page scrolls sideways by {overflow}px on a phone"
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-100-phone.png"), full_page=False)
            assert_accessible(page, "/leaderboard, 100 contenders, plain, phone")
            context.close()

    def test_two_contenders(self, chromium, tmp_path):
        with serve_with(tmp_path, snapshot_for(2, 300, 2)) as base:
            context, page, _, errors = open_page(chromium, base)
            assert errors == []
            assert page.locator("#lb-chart .lb-chart-row").count() == 2
            assert page.locator("#lb-heat rect").count() == 4
            assert "300" in page.locator(".lb-meta").inner_text()
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-2-desktop.png"), full_page=True)
            context.close()

    def test_empty_state(self, chromium, tmp_path):
        with serve_with(tmp_path, None) as base:
            context, page, _, errors = open_page(chromium, base)
            assert errors == []
            assert "No leaderboard yet" in page.locator("#lb-empty").inner_text()
            assert_accessible(page, "/leaderboard, empty, desktop")
            context.close()

    def test_gate_uplift_and_position_are_one_sentence_each(self, chromium, tmp_path):
        from tests.ratings.test_extended import GATE, NAMES, simulate

        a, b, y = simulate(20_000, np.random.default_rng(3))
        snapshot = build_snapshot(VoteLog(NAMES, a, b, y, gate=GATE), RankOptions(ci="sandwich", style=False))
        uplift = snapshot["gate_uplift"]["gpt-4o"]
        with serve_with(tmp_path, snapshot) as base:
            context, page, _, errors = open_page(chromium, base)
            assert errors == []
            sentences = page.locator("#lb-effects li").all_inner_texts()
            expected = (
                f"+gate adds {uplift['points']:.0f} [{uplift['ci_low']:.0f}, {uplift['ci_high']:.0f}] points to gpt-4o."
            )
            assert expected in sentences
            assert any(s.startswith("+gate takes ") and s.endswith(" points from claude.") for s in sentences)
            assert sum("left answer (A)" in s for s in sentences) == 1 and len(sentences) == 3
            page.locator("#lb-effects").screenshot(path=str(SCREENSHOTS / "leaderboard-effects.png"))
            context.close()


class TestHonestUncertaintyInBrowser:
    def test_provisional_contenders_apart_and_robustness_in_words(self, chromium, tmp_path):
        rng = np.random.default_rng(4)
        strengths = np.array([0.5, 0.45, 0.1, -0.2, -0.5])
        a, b, y, fa, fb = simulate(strengths, 3000, rng)
        names = ["gpt-4o", "claude-3.5-sonnet", "ocr-geolocator+gate", "ocr-geolocator", "newcomer-7b"]
        keep = ((a != 4) & (b != 4)) | (np.arange(a.size) < 600)  # newcomer: only its early votes
        a, b, y, fa, fb = a[keep], b[keep], y[keep], fa[keep], fb[keep]
        log = VoteLog(names, a, b, y, fa, fb, np.arange(a.size, dtype=float), {n: n.endswith("+gate") for n in names})
        snapshot = build_snapshot(log, RankOptions(rounds=20, seed=4, provisional_votes=300))
        newcomer = next(r for r in snapshot["leaderboard"] if r["contender"] == "newcomer-7b")
        assert newcomer["provisional"] and newcomer["votes"] < 300
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        with serve_with(tmp_path, snapshot) as base:
            context, page, _, errors = open_page(chromium, base)
            assert errors == []
            board = page.locator("#lb-table tbody:visible").inner_text()
            apart = page.locator("#lb-prov-table tbody:visible").inner_text()
            assert "newcomer-7b" not in board and "newcomer-7b" in apart
            assert page.locator("#lb-table tbody tr:visible").count() == 4
            sentence = page.locator("#lb-robustness-sentence").inner_text()
            votes = snapshot["robustness"]["top_swap_votes"]
            assert sentence.startswith(f"#1 would change if {votes:,} vote")
            page.click("#lb-robustness summary")
            assert page.locator("#lb-robustness li").count() == 3
            page.click("button[data-view=style]")  # the style view keeps them apart too
            assert "newcomer-7b" in page.locator("#lb-prov-table tbody:visible").inner_text()
            assert "newcomer-7b" not in page.locator("#lb-table tbody:visible").inner_text()
            page.click("button[data-view=plain]")
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-provisional-robustness.png"), full_page=True)
            context.close()


CHATBOT_ARENA = SHARED / "data" / "chatbot-arena-20240814" / "pair_counts.json"
DESKTOP = {"width": 1280, "height": 900}


def chatbot_arena_snapshot(share: float = 0.05, seed: int = 5) -> dict[str, Any]:
    """A board of Chatbot Arena's 129 models from a random 5% of its real
    2024-08-14 votes (about 84k; pair counts from the leaderbot project, see
    the data folder's README); style features simulated, sandwich intervals."""
    if not CHATBOT_ARENA.exists():
        pytest.fail(f"missing {CHATBOT_ARENA} (set GEOARENA_SHARED to the shared dir)")
    data = json.loads(CHATBOT_ARENA.read_text())
    rng = np.random.default_rng(seed)
    pairs = np.asarray(data["X"], dtype=np.int64)
    counts = rng.binomial(np.asarray(data["Y"], dtype=np.int64), share)  # wins i, wins j, tie, both bad
    per_pair = counts.sum(axis=1)
    a, b = np.repeat(pairs[:, 0], per_pair), np.repeat(pairs[:, 1], per_pair)
    y = np.concatenate([np.repeat([1.0, 0.0, 0.5, 0.5], c) for c in counts])
    # per style feature, in FEATURES order: characters, list items, headers, emphasis, GPS mentions, tool calls
    means = dict(zip(FEATURES, [300.0, 2.0, 1.0, 3.0, 0.2, 1.0], strict=True))
    fa, fb = (rng.poisson([means[f] for f in FEATURES], (y.size, len(FEATURES))).astype(np.float64) for _ in range(2))
    log = VoteLog(list(data["models"]), a, b, y, fa, fb, np.arange(y.size, dtype=np.float64), {}, {})
    return build_snapshot(log, RankOptions(ci="sandwich", seed=seed))


def visible_rows(page: Any, table: str = "#lb-table") -> list[list[str]]:
    return page.locator(f"{table} tbody tr:visible").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells, c => c.innerText.trim()))"
    )


def name_of(cell: str) -> str:
    """A name cell's contender, without its GATE badge."""
    return re.sub(r"\s+gate$", "", cell, flags=re.IGNORECASE)


def no_page_scroll(page: Any) -> None:
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"the page scrolls sideways by {overflow}px"


class TestStyleWithheldUntilIdentified:
    def test_few_votes_withhold_the_view_and_its_coefficients_with_the_reason(self, chromium, tmp_path):
        snapshot = snapshot_for(4, 80, 6)  # 3 + 6 parameters: 90 votes are needed
        snapshot["votes_used"] = 70
        reason = Snapshot.model_validate(snapshot).style_withheld()
        assert reason and "appear at 90 votes" in reason and "there are 70 so far" in reason
        with serve_with(tmp_path, snapshot) as base:
            for phone in (False, True):
                context, page, _, errors = open_page(chromium, base, phone=phone)
                assert errors == []
                toggle = page.locator("button[data-view=style]")
                assert toggle.is_disabled()
                assert page.locator("#lb-style-why").inner_text() == reason
                assert toggle.get_attribute("aria-describedby") == "lb-style-why"
                assert page.locator("#lb-coef").count() == 0 and page.locator("tbody[data-view=style]").count() == 0
                size = "phone" if phone else "desktop"
                page.screenshot(path=str(SCREENSHOTS / f"leaderboard-style-withheld-{size}.png"), full_page=False)
                assert_accessible(page, f"/leaderboard, style withheld, {size}")
                context.close()
            api = httpx.get(base + "/api/leaderboard", trust_env=False).json()
            assert api["style_withheld"] == reason and api["style"]["coefficients"]  # the data stays downloadable
            csv_rows = list(csv.DictReader(io.StringIO(httpx.get(base + "/leaderboard.csv", trust_env=False).text)))
            assert {r["style_rating"] for r in csv_rows} == {""}

    def test_unbounded_intervals_withhold_it_too(self):
        snapshot = snapshot_for(3, 3000, 7)
        assert Snapshot.model_validate(snapshot).style_withheld() is None
        snapshot["style"]["leaderboard"][0]["ci_high"] = 35702.0  # the issue's -16576 to 35702
        reason = Snapshot.model_validate(snapshot).style_withheld()
        assert reason and "cannot tell style apart from skill" in reason
        snapshot = snapshot_for(3, 3000, 7)
        snapshot["style"]["coefficients"][1]["ci_low"] = float("-inf")
        assert "cannot tell style apart" in (Snapshot.model_validate(snapshot).style_withheld() or "")


class TestOneRounding:
    def test_the_same_win_rate_in_every_view_and_on_the_server(self, chromium, tmp_path):
        snapshot = snapshot_for(3, 3000, 8)
        top = snapshot["leaderboard"][0]["contender"]
        # 56.25%: Python's "%.1f" gives 56.2 (binary half-even), JavaScript's toFixed 56.3
        for board in (snapshot["leaderboard"], snapshot["style"]["leaderboard"]):
            next(r for r in board if r["contender"] == top)["win_rate"] = 0.5625
        with serve_with(tmp_path, snapshot) as base:
            context, page, _, errors = open_page(chromium, base)
            plain = next(r for r in visible_rows(page) if name_of(r[1]) == top)
            page.click("button[data-view=style]")
            style = next(r for r in visible_rows(page) if name_of(r[1]) == top)
            page.click("button[data-view=plain]")
            again = next(r for r in visible_rows(page) if name_of(r[1]) == top)
            assert plain[5] == style[5] == again[5] == "56.3%"
            served = httpx.get(base + "/leaderboard", trust_env=False).text
            assert "56.3%" in served and "56.2%" not in served
            assert errors == []
            context.close()


class TestPhoneAndHeatMap:
    def test_129_real_contenders_read_at_390_px_and_on_a_laptop(self, chromium, tmp_path):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        snapshot = chatbot_arena_snapshot()
        assert len(snapshot["leaderboard"]) == 129
        with serve_with(tmp_path, snapshot) as base:
            context, page, _, errors = open_page(chromium, base, phone=True)
            assert errors == []
            no_page_scroll(page)
            # rank, name, rating with its interval under it, votes and win rate fit without scrolling
            wrap = page.locator("#lb-table").locator("xpath=..")
            assert wrap.evaluate("w => w.scrollWidth <= w.clientWidth + 1"), "the board scrolls sideways at 390 px"
            assert page.locator("#lb-table th:visible").all_inner_texts()[-2:] == ["Votes", "Win rate"]
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-129-phone.png"), full_page=False)
            # any box that still scrolls is reachable by keyboard and says so
            for box in page.locator(".lb-scrolls").all():
                assert box.get_attribute("tabindex") == "0" and box.get_attribute("aria-label")
            for box in page.locator(".lb-scrolls--x").all():
                assert box.evaluate("b => b.previousElementSibling.classList.contains('lb-scroll-hint')")
            page.select_option("#lb-heat-size", "129")
            heat = page.locator("#lb-heat")
            assert heat.locator("rect").count() == 129 * 129
            no_page_scroll(page)
            heat.scroll_into_view_if_needed()
            page.locator("#lb-heat").screenshot(path=str(SCREENSHOTS / "leaderboard-129-heat-phone.png"))
            assert_accessible(page, "/leaderboard, 129 Chatbot Arena contenders, phone")
            page.click("button[data-view=style]")
            no_page_scroll(page)
            assert_accessible(page, "/leaderboard, 129 Chatbot Arena contenders, style-adjusted, phone")
            context.close()

            context, page, _, errors = open_page(chromium, base)
            page.select_option("#lb-heat-size", "129")
            svg_width = page.locator("#lb-heat svg").evaluate("s => s.getBoundingClientRect().width")
            box_width = page.locator("#lb-heat").evaluate("b => b.clientWidth")
            assert svg_width <= box_width + 1, f"the heat map ({svg_width}px) is cut at the card ({box_width}px)"
            page.locator("#lb-heat").screenshot(path=str(SCREENSHOTS / "leaderboard-129-heat-desktop.png"))
            page.select_option("#lb-heat-size", "20")
            assert page.locator("#lb-heat text.lb-label").count() == 40  # 20 row and 20 column names
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-129-desktop-full.png"), full_page=True)
            assert_accessible(page, "/leaderboard, 129 Chatbot Arena contenders, desktop")
            assert errors == []
            context.close()


class TestSortFilterDownloads:
    def test_sort_by_column_filter_by_name_and_download(self, chromium, tmp_path):
        snapshot = snapshot_for(12, 6000, 9)
        with serve_with(tmp_path, snapshot) as base:
            for phone in (False, True):
                context, page, _, errors = open_page(chromium, base, phone=phone)
                page.click("#lb-table th[data-sort=votes] button")
                votes = [int(r[4].replace(",", "")) for r in visible_rows(page)]
                assert votes == sorted(votes, reverse=True)
                assert page.get_attribute("#lb-table th[data-sort=votes]", "aria-sort") == "descending"
                assert page.get_attribute("#lb-table th[data-sort=rank]", "aria-sort") is None
                page.click("#lb-table th[data-sort=votes] button")
                assert [int(r[4].replace(",", "")) for r in visible_rows(page)] == sorted(votes)
                page.click("#lb-table th[data-sort=contender] button")
                names = [name_of(r[1]) for r in visible_rows(page)]
                assert names == sorted(names, key=str.casefold)
                page.click("button[data-view=style]")  # the order holds in the other view
                names = [name_of(r[1]) for r in visible_rows(page)]
                assert names == sorted(names, key=str.casefold)
                page.click("button[data-view=plain]")
                page.fill("#lb-filter", "+GATE")  # case does not matter
                gated = sorted(r["contender"] for r in snapshot["leaderboard"] if r["contender"].endswith("+gate"))
                assert sorted(name_of(r[1]) for r in visible_rows(page)) == gated
                page.fill("#lb-filter", "contender-0")
                assert all(r[1].startswith("contender-0") for r in visible_rows(page)) and visible_rows(page)
                assert "match" in page.locator("#lb-status").inner_text()
                page.fill("#lb-filter", "no such model")
                assert visible_rows(page) == [] and page.locator("#lb-no-match").is_visible()
                size = "phone" if phone else "desktop"
                page.screenshot(path=str(SCREENSHOTS / f"leaderboard-filter-{size}.png"), full_page=False)
                assert_accessible(page, f"/leaderboard, sorted and filtered, {size}")
                page.fill("#lb-filter", "")
                assert len(visible_rows(page)) == 12
                assert errors == []
                links = page.locator("#lb-downloads a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
                assert links == ["/leaderboard.csv", "/api/leaderboard"]
                with page.expect_download() as download:
                    page.click("#lb-downloads a[href='/leaderboard.csv']")
                saved = Path(download.value.path()).read_text()
                context.close()
            api = httpx.get(base + "/api/leaderboard", trust_env=False).json()
            rows = list(csv.DictReader(io.StringIO(saved)))
            assert [r["contender"] for r in rows] == [r["contender"] for r in api["leaderboard"]]
            for row, want in zip(rows, api["leaderboard"], strict=True):
                assert float(row["rating"]) == want["rating"] and float(row["win_rate"]) == want["win_rate"]
                assert int(row["votes"]) == want["votes"] and row["gate"] == str(want["gate"]).lower()
            styled = {r["contender"]: r for r in api["style"]["leaderboard"]}
            assert all(float(r["style_rating"]) == styled[r["contender"]]["rating"] for r in rows)
            response = httpx.get(base + "/leaderboard.csv", trust_env=False)
            assert response.headers["content-type"].startswith("text/csv")
            assert response.headers["content-disposition"].startswith('attachment; filename="geoarena-leaderboard-')

    def test_an_empty_board_downloads_a_header(self, tmp_path):
        with serve_with(tmp_path, None) as base:
            response = httpx.get(base + "/leaderboard.csv", trust_env=False)
        assert response.status_code == 200 and response.text.splitlines() == [",".join(CSV_COLUMNS)]


class TestDarkModeToggle:
    def test_the_choice_is_remembered_across_pages_and_reloads(self, chromium, tmp_path):
        with serve_with(tmp_path, snapshot_for(5, 2000, 10)) as base:
            context = chromium.new_context(viewport=DESKTOP, color_scheme="light")
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(base + "/leaderboard")
            background = "() => getComputedStyle(document.body).backgroundColor"
            light = page.evaluate(background)
            toggle = page.locator("#theme-toggle")
            assert toggle.get_attribute("aria-pressed") == "false" and toggle.is_visible()
            toggle.click()
            assert page.evaluate("document.documentElement.dataset.theme") == "dark"
            assert toggle.get_attribute("aria-pressed") == "true"
            dark = page.evaluate(background)
            assert dark != light
            # the chart is redrawn in the dark theme's colours (accent, or violet for GATE)
            fills = set(page.locator("#lb-chart circle").evaluate_all("cs => cs.map(c => c.getAttribute('fill'))"))
            assert fills <= {"rgb(63, 166, 139)", "rgb(195, 160, 239)"} and fills
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-dark-desktop.png"), full_page=False)
            assert_accessible(page, "/leaderboard, dark mode, desktop")
            page.reload()
            assert page.evaluate(background) == dark and toggle.get_attribute("aria-pressed") == "true"
            page.goto(base + "/terms")  # every page: the toggle lives in base.html
            assert page.evaluate(background) == dark
            assert_accessible(page, "/terms, dark mode, desktop")
            page.goto(base + "/")
            assert page.evaluate(background) == dark
            page.locator("#theme-toggle").click()
            assert page.evaluate(background) == light
            page.goto(base + "/leaderboard")
            assert page.evaluate(background) == light
            assert errors == []  # under the real CSP: no inline script
            context.close()

            # a system set to dark starts dark, and the toggle overrides it
            context = chromium.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark", is_mobile=True)
            page = context.new_page()
            page.goto(base + "/leaderboard")
            assert page.evaluate(background) == dark
            assert page.locator("#theme-toggle").get_attribute("aria-pressed") == "true"
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-dark-phone.png"), full_page=False)
            assert_accessible(page, "/leaderboard, dark mode, phone")
            page.locator("#theme-toggle").click()
            assert page.evaluate(background) == light
            context.close()
