"""The rating job against real databases, and the leaderboard page and API."""

from __future__ import annotations

import json
import re

from sqlalchemy import select

from arena.answers.style import style_features
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import LeaderboardSnapshot, Response
from arena.export.db import export_rows
from arena.ratings.job import log_from_database, rank_database
from arena.ratings.leaderboard import RankOptions
from arena.ratings.snapshot import EMPTY_MESSAGE
from tests.export.seed import add_voted_battle, seed_arena


def sessions_for(url: str):  # type: ignore[no-untyped-def]
    return make_sessionmaker(make_engine(url))


class TestRankDatabase:
    def test_counts_votes_and_exclusions_and_stores_a_snapshot(self, database_url):
        sessions = sessions_for(database_url)
        with sessions() as session:
            seed_arena(session)
        snapshot = rank_database(sessions, RankOptions(rounds=20, seed=3))
        assert snapshot["votes_used"] == 12
        assert snapshot["excluded"] == {"abandoned": 1, "flagged:identity_leak": 1, "side_failed": 1}
        assert {r["contender"] for r in snapshot["leaderboard"]} == {"geo-large", "geo-small", "geo-small+gate"}
        assert sum(r["votes"] for r in snapshot["leaderboard"]) == 24
        gate = next(r for r in snapshot["leaderboard"] if r["contender"] == "geo-small+gate")
        assert gate["gate"] is True
        assert {c["name"] for c in snapshot["categories"]} >= {
            "language:en",
            "language:fr",
            "gate vs plain",
            "category:landmark",
        }
        with sessions() as session:
            stored = session.scalars(select(LeaderboardSnapshot)).one()
            assert stored.votes_used == 12 and stored.payload["leaderboard"] == snapshot["leaderboard"]

    def test_the_tool_use_feature_counts_each_sides_trajectory(self, database_url):
        sessions = sessions_for(database_url)
        with sessions() as session:
            battle_id = add_voted_battle(session, "geo-large", "geo-small+gate", "b")
            gate_side = session.scalars(
                select(Response).where(Response.battle_id == battle_id, Response.side == "b")
            ).one()
            # stored before the runner kept tool_calls with the style counts: counted from the trajectory
            gate_side.trajectory = [{"tool": "crop"}, {"tool": "web_search"}, {"tool": "visit"}]
            session.commit()
            log, _ = log_from_database(session)
            assert log.features_a is not None and log.features_b is not None
            assert (log.features_a[0][-1], log.features_b[0][-1]) == (0.0, 3.0)
            row = next(export_rows(session))
            assert (row["tool_calls_a"], row["tool_calls_b"]) == (0, 3)
            # the runner's stored count wins over the trajectory's length
            gate_side.style = {**style_features(gate_side.text), "tool_calls": 5}
            session.commit()
            log, _ = log_from_database(session)
            assert log.features_b is not None and log.features_b[0][-1] == 5.0

    def test_style_features_come_from_the_final_answers(self, database_url):
        sessions = sessions_for(database_url)
        with sessions() as session:
            add_voted_battle(session, "geo-large", "geo-small", "a")
            session.commit()
            log, _ = log_from_database(session)
        assert log.features_a is not None and log.features_b is not None
        # geo-large: 1 header, 2 list items, 1 bold, 1 GPS mention, no tools; geo-small: plain prose
        assert log.features_a[0][1:].tolist() == [2.0, 1.0, 1.0, 1.0, 0.0]
        assert log.features_b[0][1:].tolist() == [0.0, 0.0, 0.0, 0.0, 0.0]


class TestLeaderboardApi:
    async def test_empty_state_before_the_first_snapshot(self, client):
        response = await client.get("/api/leaderboard")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "empty" and body["leaderboard"] == [] and body["message"] == EMPTY_MESSAGE
        page = await client.get("/leaderboard")
        assert page.status_code == 200 and "No leaderboard yet" in page.text

    async def test_latest_snapshot_is_served_and_rendered(self, client, app):
        sessions = app.state.services.database.sessions
        with sessions() as session:
            seed_arena(session)
        rank_database(sessions, RankOptions(rounds=10, seed=1))
        latest = rank_database(sessions, RankOptions(ci="sandwich"))
        body = (await client.get("/api/leaderboard")).json()
        assert body["status"] == "ok" and body["method"]["ci"] == "sandwich"
        assert body["leaderboard"] == latest["leaderboard"]
        page = (await client.get("/leaderboard")).text
        for row in latest["leaderboard"]:
            assert row["contender"] in page
        assert "Style-adjusted" in page and "/static/leaderboard.js" in page
        assert not re.search(
            r"https?://(?!www\.w3\.org)", page.split('<script type="application/json"')[0].split("<main")[1]
        )
        embedded = re.search(r'<script type="application/json" id="lb-data">(.*?)</script>', page, re.DOTALL)
        assert embedded and json.loads(embedded.group(1))["votes_used"] == 12

    async def test_the_page_names_the_confidence_level_the_snapshot_used(self, client, app):
        sessions = app.state.services.database.sessions
        with sessions() as session:
            seed_arena(session)
        rank_database(sessions, RankOptions(ci="sandwich", level=0.9))
        page = (await client.get("/leaderboard")).text
        # the benchmark section's accuracy intervals are Wilson 95% whatever the snapshot's level
        ratings_part = page.split('<section class="lb-bench"')[0]
        assert "95%" not in ratings_part
        assert "90% confidence intervals" in page and "90% CI" in page and "Ratings with 90% intervals" in page

    async def test_votes_cast_in_the_arena_reach_the_leaderboard(self, client, app, photo_bytes):
        from tests.battles.test_flow import run_battle

        for _ in range(2):
            battle_id, events = await run_battle(client, photo_bytes)
            assert events[-1][0] == "end"
            vote = await client.post(f"/api/battles/{battle_id}/vote", json={"choice": "a"})
            assert vote.status_code == 200, vote.text
        snapshot = rank_database(app.state.services.database.sessions, RankOptions(rounds=10))
        assert snapshot["votes_used"] == 2
        body = (await client.get("/api/leaderboard")).json()
        assert {r["contender"] for r in body["leaderboard"]} == {"model-one", "model-two"}
