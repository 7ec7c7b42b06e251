"""Unsure battles on both databases: the LLM judge's re-check on a loopback server, a
reviewer's mark, and what the rank job makes of them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from arena.cli import main
from arena.config import ContenderConfig
from arena.contenders.deps import ProviderDeps
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Battle
from arena.gatekeeper.llm import LLMJudge
from arena.gatekeeper.recheck import NOT_GEOGRAPHIC, pending, recheck_unsure, record
from arena.images.store import LocalImageStore
from arena.ratings.job import rank_database
from arena.ratings.leaderboard import RankOptions
from tests.export.seed import add_voted_battle
from tests.gatekeeper.judge_server import JudgeServer
from tests.servers import serve_in_thread


def _seed(url: str) -> dict[str, str]:
    """Six voted battles: two unsure ones whose prompts a "where" judge tells apart, one unsure
    one already re-checked, and three the gatekeeper took outright."""
    sessions = make_sessionmaker(make_engine(url))
    ids: dict[str, str] = {}
    with sessions() as session:
        for name, choice, prompt in (
            ("taken-1", "a", "Where was this taken?"),
            ("taken-2", "b", "Which country is this?"),
            ("taken-3", "a", "Where is this?"),
            ("unsure-where", "a", "ok where is this lol 1) Lyon 2) Lille"),
            ("unsure-caption", "b", "Write a caption that names the place in the photo"),
            ("unsure-done", "tie", "Guess the spot"),
        ):
            bid = add_voted_battle(session, "geo-large", "geo-small", choice, minute=len(ids))
            battle = session.get(Battle, bid)
            assert battle is not None
            battle.prompt, battle.unsure = prompt, name.startswith("unsure")
            ids[name] = bid
        assert record(session, ids["unsure-done"], True, "reviewer")
        session.commit()
    return ids


class TestRecheck:
    async def test_the_judge_rechecks_only_the_waiting_unsure_prompts(self, database_url: str, tmp_path: Path) -> None:
        ids = _seed(database_url)
        sessions = make_sessionmaker(make_engine(database_url))
        with sessions() as session:
            assert sorted(bid for bid, _ in pending(session)) == sorted([ids["unsure-where"], ids["unsure-caption"]])
        server = JudgeServer()
        with serve_in_thread(server.app) as url:
            async with httpx.AsyncClient() as http:
                cfg = ContenderConfig(name="judge", provider="openai", model="where-judge", base_url=f"{url}/v1")
                deps = ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=None)  # type: ignore[arg-type]
                judge = LLMJudge.from_config(cfg, deps, timeout=5.0)
                tally = await recheck_unsure(sessions, judge)
                again = await recheck_unsure(sessions, judge)
        assert (tally.asked, tally.not_geographic, tally.failed) == (2, 1, 0)
        assert again.asked == 0 and len(server.requests) == 2  # a re-checked battle is not asked twice
        with sessions() as session:
            found = {b.id: b for b in session.scalars(select(Battle))}
        assert (found[ids["unsure-where"]].recheck, found[ids["unsure-where"]].flags) == ("geographic", [])
        caption = found[ids["unsure-caption"]]
        assert (caption.recheck, caption.rechecked_by, caption.flags) == (
            NOT_GEOGRAPHIC,
            "llm:where-judge",
            [NOT_GEOGRAPHIC],
        )

        # the rank job leaves out only the battle the re-check set aside, and counts the unsure ones
        snapshot = await asyncio.to_thread(rank_database, sessions, RankOptions(rounds=5, seed=1))
        assert snapshot["votes_used"] == 5 and snapshot["excluded"] == {"flagged:not_geographic": 1}
        assert snapshot["unsure"] == {"votes": 3, "kept": 2, "set_aside": 1, "not_rechecked": 0}

    def test_a_failing_judge_leaves_the_battle_waiting(self, database_url: str) -> None:
        ids = _seed(database_url)
        sessions = make_sessionmaker(make_engine(database_url))

        class Down:
            name = "llm:down"

            async def judge(self, prompt: str) -> tuple[bool, str]:
                raise httpx.ConnectError("refused")

        tally = asyncio.run(recheck_unsure(sessions, Down()))
        assert (tally.asked, tally.failed) == (2, 2)
        with sessions() as session:
            assert ids["unsure-caption"] in {bid for bid, _ in pending(session)}
        snapshot = rank_database(sessions, RankOptions(rounds=5, seed=1))
        assert snapshot["excluded"] == {} and snapshot["unsure"]["not_rechecked"] == 2


class TestReviewerCommand:
    def test_mark_overrules_and_list_shows_it(
        self, database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        ids = _seed(database_url)
        monkeypatch.setenv("ARENA_DATABASE_URL", database_url)
        assert main(["unsure", "mark", ids["unsure-done"], "not_geographic"]) == 0
        assert main(["unsure", "mark", "no-such-battle", "geographic"]) == 1
        assert main(["unsure", "list"]) == 0
        out = capsys.readouterr()
        assert "there is no battle 'no-such-battle'" in out.err
        assert f"{ids['unsure-done']}" in out.out and "not_geographic (reviewer)" in out.out
        assert out.out.count("not re-checked") == 2
        sessions = make_sessionmaker(make_engine(database_url))
        with sessions() as session:
            battle = session.get(Battle, ids["unsure-done"])
            assert battle is not None and battle.flags == [NOT_GEOGRAPHIC]
        assert main(["unsure", "mark", ids["unsure-done"], "geographic"]) == 0  # and back
        with sessions() as session:
            battle = session.get(Battle, ids["unsure-done"])
            assert battle is not None and (battle.flags, battle.recheck) == ([], "geographic")

    def test_recheck_without_a_judge_says_so(
        self, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setenv("ARENA_DATABASE_URL", database_url)
        monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "no-pool.toml"))
        assert main(["unsure", "recheck"]) == 1
        assert "arena unsure mark" in capsys.readouterr().err
