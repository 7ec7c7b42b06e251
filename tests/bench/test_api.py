"""`GET /api/bench`: benchmark boards beside the ratings, served by the real app."""

from __future__ import annotations

import asyncio

from arena.cli import main
from arena.db.session import make_engine, make_sessionmaker
from arena.ratings.job import store_snapshot
from tests.bench.conftest import PARIS_ROWS, write_dataset
from tests.bench.test_bench_command import write_pool


class TestBenchApi:
    async def test_empty_then_boards_with_ratings(
        self, client, settings, monkeypatch, tmp_path, openai_server, judge_server
    ):
        empty = (await client.get("/api/bench")).json()
        assert empty["status"] == "empty" and "arena bench" in empty["message"]

        monkeypatch.setenv("ARENA_CONFIG", str(write_pool(tmp_path / "b.toml", openai_server[0], judge_server[0])))
        monkeypatch.setenv("ARENA_DATABASE_URL", settings.database_url)
        monkeypatch.setenv("ARENA_DATA_DIR", str(settings.data_dir))
        dataset = write_dataset(tmp_path / "ds", PARIS_ROWS)
        assert await asyncio.to_thread(main, ["bench", "--dataset", str(dataset), "--contenders", "echo-a,echo-b"]) == 0
        engine = make_engine(settings.database_url)
        store_snapshot(
            make_sessionmaker(engine),
            {
                "computed_at": "2026-12-01T10:00:00+00:00",
                "votes_used": 40,
                "excluded": {},
                "leaderboard": [
                    {
                        "contender": "echo-a",
                        "rating": 1012.5,
                        "ci_low": 990.0,
                        "ci_high": 1030.0,
                        "rank": 1,
                        "votes": 40,
                        "win_rate": 0.55,
                    }
                ],
            },
        )
        engine.dispose()

        body = (await client.get("/api/bench")).json()
        assert body["status"] == "ok"
        assert [(b["suite"], b["grader"]) for b in body["boards"]] == [("mini", "llm:fair-judge"), ("mini", "offline")]
        judged = {r["contender"]: r for r in body["boards"][0]["contenders"]}
        assert judged["echo-a"]["rating"]["rating"] == 1012.5 and judged["echo-b"]["rating"] is None
        assert judged["echo-a"]["accuracy"]["k"] == 1 and judged["echo-a"]["by_level"]["1"]["n"] == 2
        assert body["boards"][0]["judge_agreement"]["runs"] == 6
        assert body["boards"][1]["offline"] is True and "judge_agreement" not in body["boards"][1]
