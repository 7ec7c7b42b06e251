"""An imported vote is a record of a battle that ran elsewhere: nothing here runs it again."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from arena.cli import main as arena_main
from arena.db.tables import Battle
from arena.ratings.job import log_from_database


def _row(qid: str, status: str) -> dict[str, object]:
    return {
        "question_id": qid,
        "model_a": "model-one",
        "model_b": "model-two",
        "winner": "model_a",
        "tstamp": 1767225600.0,
        "battle_status": status,
        "sides_done": True,
    }


class TestImportedBattleStatus:
    @pytest.mark.parametrize("status", ["pending", "running"])
    async def test_a_battle_in_flight_in_the_file_is_stored_voted_and_never_claimed(
        self, app, client, settings, tmp_path, monkeypatch: pytest.MonkeyPatch, status: str
    ):
        qid = "ab" * 16
        path = tmp_path / "votes.jsonl"
        path.write_text(json.dumps(_row(qid, status)) + "\n")
        monkeypatch.setenv("ARENA_DATABASE_URL", settings.resolved_database_url)
        monkeypatch.setenv("ARENA_CONFIG", "/nonexistent/arena.toml")
        assert arena_main(["import", str(path)]) == 0

        # anyone can open a battle's event stream by its id: it must not start the battle's run
        events = await client.get(f"/api/battles/{qid}/events")
        assert events.status_code == 200

        sessions = app.state.services.database.sessions
        with sessions() as session:
            assert session.scalars(select(Battle.status).where(Battle.id == qid)).one() == "voted"
            log, excluded = log_from_database(session)
        assert excluded == {} and log.size == 1  # the vote still counts
