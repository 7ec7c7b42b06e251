"""The board refreshes itself: `arena serve` ranks new votes in the background
(ARENA_RANK_EVERY / `[ratings] every`), on SQLite and PostgreSQL, in-process
and as a real `arena serve` subprocess, and stops with the app."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from arena.app import create_app
from arena.config import Settings, interval_seconds, load_pool
from arena.ratings.snapshot import EMPTY_MESSAGE
from tests.conftest import SAMPLE_DIR, write_pool
from tests.web.conftest import serve_arena

WAIT = 90.0  # seconds: the job bootstraps 100 rounds on a machine other tests share


async def vote_once(client: httpx.AsyncClient, photo: bytes, choice: str, base: str = "") -> None:
    created = await client.post(
        f"{base}/api/battles",
        files={"image": ("photo.jpg", photo, "image/jpeg")},
        data={"prompt": "Where was this taken?"},
    )
    assert created.status_code == 201, created.text
    body = created.json()
    events = await client.get(f"{base}{body['events_url']}")
    assert "event: ready" in events.text, events.text[-500:]
    voted = await client.post(f"{base}/api/battles/{body['battle_id']}/vote", json={"choice": choice})
    assert voted.status_code == 200, voted.text


async def board_with(client: httpx.AsyncClient, votes: int, base: str = "") -> dict:
    """Poll /api/leaderboard until it counts `votes` votes (nobody runs `arena rank`)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        body = (await client.get(f"{base}/api/leaderboard")).json()
        if body["status"] == "ok" and body["votes_used"] >= votes:
            return body
        await asyncio.sleep(0.25)
    pytest.fail(f"the leaderboard did not reach {votes} votes within {WAIT:.0f} s: {body}")


class TestServedApp:
    @pytest.fixture
    def settings(self, settings):
        return settings.model_copy(update={"rank_every": "1s"})

    async def test_votes_reach_the_leaderboard_without_arena_rank(self, app, client, photo_bytes):
        ranker = app.state.background_ranker
        assert ranker is not None and ranker.running and ranker.interval == 1.0
        empty = (await client.get("/api/leaderboard")).json()
        assert empty["status"] == "empty" and empty["message"] == EMPTY_MESSAGE
        for choice in ("a", "b", "tie"):
            await vote_once(client, photo_bytes, choice)
        board = await board_with(client, 3)
        assert board["votes_used"] == 3
        assert {row["contender"] for row in board["leaderboard"]} == {"model-one", "model-two"}
        runs = ranker.runs
        await vote_once(client, photo_bytes, "a")  # a later vote gets a later snapshot
        assert (await board_with(client, 4))["votes_used"] == 4
        assert ranker.runs == runs + 1
        await asyncio.sleep(2.5)  # no new votes: no new snapshot
        assert ranker.runs == runs + 1

    async def test_the_thread_stops_with_the_app(self, settings):
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            ranker = app.state.background_ranker
            assert ranker.running
        assert not ranker.running


async def test_off_by_zero_and_under_tests_by_default(settings):
    for given in (settings, settings.model_copy(update={"rank_every": "0"})):
        app = create_app(given)
        async with app.router.lifespan_context(app):
            assert app.state.background_ranker is None


async def test_arena_serve_ranks_on_its_own(tmp_path, openai_server):
    """A real `arena serve` (SQLite, ARENA_ENV=test) with `[ratings] every` in its pool file."""
    base_url, _ = openai_server
    pool = write_pool(tmp_path / "arena.toml", base_url, {"model-one": "echo-one", "model-two": "echo-two"})
    pool.write_text(
        pool.read_text() + '\n[ratings]\nevery = "1s"\nrounds = 20\n'
        "\n[integrity]\nmin_read_seconds = 0\nread_chars_per_second = 1e9\n"
    )
    photo = (SAMPLE_DIR / "images" / "level1-1.jpg").read_bytes()
    with serve_arena(tmp_path, pool) as server:
        async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
            page = (await client.get(f"{server.url}/leaderboard")).text
            assert "No leaderboard yet" in page and "arena rank" not in page
            await vote_once(client, photo, "a", server.url)
            await vote_once(client, photo, "b", server.url)
            board = await board_with(client, 2, server.url)
        assert {row["contender"] for row in board["leaderboard"]} == {"model-one", "model-two"}
        assert "Traceback" not in server.log.read_text()
        assert len(list((server.data_dir / "rank").glob("votes-*.arrow"))) == 1  # ranking's copy of the votes


class TestSettings:
    def test_intervals(self):
        assert [interval_seconds(t) for t in ("30s", "10m", "1h", "0", "2.5")] == [30, 600, 3600, 0, 2.5]
        with pytest.raises(ValueError, match="not an interval"):
            interval_seconds("soon")

    def test_environment_over_pool_file_over_default(self, tmp_path: Path, monkeypatch):
        pool = tmp_path / "arena.toml"
        pool.write_text(
            '[[contenders]]\nname = "a"\nprovider = "baseline"\n[[contenders]]\nname = "b"\n'
            'provider = "baseline"\n[ratings]\nevery = "2m"\n'
        )
        assert Settings(config=pool).rank_interval == 120
        assert Settings(config=tmp_path / "none.toml").rank_interval == 30
        assert Settings(config=tmp_path / "none.toml", env="test").rank_interval == 0
        monkeypatch.setenv("ARENA_RANK_EVERY", "0")
        assert Settings(config=pool).rank_interval == 0
        monkeypatch.setenv("ARENA_RANK_EVERY", "whenever")
        with pytest.raises(ValueError, match="not an interval"):
            Settings(config=pool)

    def test_a_bad_pool_interval_names_the_key(self, tmp_path: Path):
        pool = tmp_path / "arena.toml"
        pool.write_text(
            '[[contenders]]\nname = "a"\nprovider = "baseline"\n[[contenders]]\nname = "b"\n'
            'provider = "baseline"\n[ratings]\nevery = "often"\n'
        )
        with pytest.raises(ValueError, match="every"):
            load_pool(pool)
