"""The leaderboard page in headless Chromium: 2 and 100 contenders, desktop
and phone, no request leaving the server, the toggle and the charts working.
Screenshots land in SCREENSHOTS (the system's temporary folder) for a person to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arena.answers.style import FEATURES
from arena.app import create_app
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.session import make_engine, make_sessionmaker
from arena.ratings.leaderboard import RankOptions, VoteLog, build_snapshot
from arena.ratings.snapshot import store_snapshot
from tests.conftest import SCREENSHOTS
from tests.ratings.simulate import simulate
from tests.servers import serve_in_thread

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
            assert page.locator("#lb-table tbody tr").count() == 100
            assert page.locator("#lb-chart .lb-chart-row").count() == 100
            assert page.locator("#lb-heat rect").count() == 20 * 20
            first_plain = page.locator("#lb-table tbody tr").first.inner_text()
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-100-desktop.png"), full_page=False)
            page.click("button[data-view=style]")
            assert page.get_attribute("button[data-view=style]", "aria-pressed") == "true"
            assert page.locator("#lb-table").evaluate("t => t.classList.contains('lb-no-elo')")
            assert page.locator("#lb-table tbody tr").first.inner_text() != first_plain
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-100-style-full.png"), full_page=True)
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
            board = page.locator("#lb-table tbody").inner_text()
            apart = page.locator("#lb-prov-table tbody").inner_text()
            assert "newcomer-7b" not in board and "newcomer-7b" in apart
            assert page.locator("#lb-table tbody tr").count() == 4
            sentence = page.locator("#lb-robustness-sentence").inner_text()
            votes = snapshot["robustness"]["top_swap_votes"]
            assert sentence.startswith(f"#1 would change if {votes:,} vote")
            page.click("#lb-robustness summary")
            assert page.locator("#lb-robustness li").count() == 3
            page.click("button[data-view=style]")  # the style view keeps them apart too
            assert "newcomer-7b" in page.locator("#lb-prov-table tbody").inner_text()
            assert "newcomer-7b" not in page.locator("#lb-table tbody").inner_text()
            page.click("button[data-view=plain]")
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-provisional-robustness.png"), full_page=True)
            context.close()
