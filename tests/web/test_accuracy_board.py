"""The leaderboard's accuracy columns, vote-vs-accuracy sentence and coverage
map, served by `arena serve` and drawn by Chromium with no outside request."""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np
import pytest

from arena.db.session import make_engine, make_sessionmaker
from arena.ratings.accuracy import LabelledVote
from arena.ratings.job import store_snapshot
from arena.ratings.leaderboard import RankOptions, build_snapshot
from arena.ratings.regions import region_categories
from arena.ratings.vote_log import VoteLogBuilder
from tests.conftest import SCREENSHOTS
from tests.web.conftest import ArenaServer, serve_arena

pytestmark = pytest.mark.browser

# (country, continent, battles): where the simulated located photos were taken
PLACES = (("CN", "AS", 120), ("JP", "AS", 60), ("FR", "EU", 40), ("BR", "SA", 25), ("US", "NA", 15), ("AU", "OC", 6))


def simulated_snapshot(seed: int = 0) -> dict[str, Any]:
    """'sharp' is usually within 25 km, 'vague' names only the country, 'shy'
    often names no place; voters prefer the closer answer 75% of the time."""
    rng = np.random.default_rng(seed)
    errors = {
        "sharp": lambda: float(rng.exponential(15.0)),
        "vague": lambda: float(rng.uniform(150, 900)),
        "shy": lambda: None if rng.random() < 0.4 else float(rng.exponential(400.0)),
    }
    names = list(errors)
    builder = VoteLogBuilder()
    for country, continent, n in PLACES:
        for _ in range(n):
            a, b = rng.choice(names, 2, replace=False)
            ea, eb = errors[a](), errors[b]()
            da, db = (ea if ea is not None else 1e9), (eb if eb is not None else 1e9)
            a_closer = da < db
            outcome = float(a_closer == (rng.random() < 0.75))
            labelled = LabelledVote(
                str(a), str(b), outcome, ea, eb, ea is not None and ea < 500, eb is not None and eb < 500, country
            )
            builder.add(
                str(a),
                str(b),
                outcome,
                regions=region_categories(label_country=country, label_continent=continent),
                labelled=labelled,
            )
    return build_snapshot(builder.build(), RankOptions(rounds=50, min_category_votes=50))


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("arena-accuracy-board")
    with serve_arena(base, base / "no-pool.toml") as server:
        engine = make_engine(f"sqlite:///{server.database}")
        store_snapshot(make_sessionmaker(engine), simulated_snapshot())
        engine.dispose()
        yield server


class TestAccuracyBoard:
    def test_page_shows_accuracy_the_share_and_the_map(self, board: ArenaServer, chromium: Any) -> None:
        html = httpx.get(board.url + "/leaderboard", timeout=10, trust_env=False).text
        assert 'id="lb-acc-table"' in html and 'id="lb-coverage-table"' in html
        context = chromium.new_context(viewport={"width": 1280, "height": 1000})
        outside: list[str] = []
        context.on("request", lambda r: None if r.url.startswith(board.url) else outside.append(r.url))
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            page.goto(board.url + "/leaderboard")
            rows = page.locator("#lb-acc-table tbody tr")
            assert rows.count() == 3
            by_name = {rows.nth(i).locator("th").inner_text(): rows.nth(i) for i in range(3)}
            sharp = by_name["sharp"].locator("td").all_inner_texts()
            shy = by_name["shy"].locator("td").all_inner_texts()
            assert int(sharp[0]) > 100  # labelled answers (about 2 in 3 of 266 battles)
            assert int(sharp[2].split("%")[0]) > 70  # within 25 km
            assert int(shy[-1].rstrip("%")) > 25  # no place named
            assert "of the votes went to the closer one" in page.locator("#lb-pva").inner_text()
            release = page.locator("#lb-acc-release").inner_text()  # how the figures are held back
            assert "measured from the 10 km square" in release and "once it has 30 answers" in release
            countries = page.locator("#lb-coverage-table tbody tr th").all_inner_texts()
            assert countries[:2] == ["China", "Japan"] and len(countries) == len(PLACES)
            shaded = page.evaluate(
                "[...document.querySelectorAll('#lb-accuracy path[data-country]')]"
                ".filter(p => p.getAttribute('fill') !== '#e5e5e5').map(p => p.dataset.country).sort()"
            )
            assert shaded == sorted(c for c, _, _ in PLACES)
            box = page.locator("#lb-accuracy .world-map").bounding_box()
            assert box is not None and box["width"] > 400 and box["height"] > 150
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.locator("#lb-accuracy").screenshot(path=str(SCREENSHOTS / "leaderboard-accuracy-map.png"))
            page.screenshot(path=str(SCREENSHOTS / "leaderboard-with-accuracy.png"), full_page=True)
        finally:
            context.close()
        assert errors == [] and outside == []

    def test_continent_boards_are_in_the_categories(self, board: ArenaServer) -> None:
        snapshot = httpx.get(board.url + "/api/leaderboard", timeout=10, trust_env=False).json()
        names = {c["name"]: c for c in snapshot["categories"]}
        assert {"continent:Asia", "continent:Europe", "continent:Oceania"} <= set(names)
        assert names["continent:Oceania"]["too_few_votes"] and not names["continent:Asia"]["too_few_votes"]
        assert set(snapshot["accuracy"]["sharp"]["within_km"]) == {"25", "200", "750", "2500"}
        assert snapshot["coverage"]["CN"] == 120
