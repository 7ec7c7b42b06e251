"""Battles whose contenders fail, stall or lose their watcher."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest
from sqlalchemy import select

from arena.app import create_app
from arena.config import Settings
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Battle, Response
from tests.battles.test_flow import parse_sse, start_battle
from tests.conftest import write_pool
from tests.servers import serve_in_thread


def arena_settings(tmp_path, database_url, base_url, models, **overrides) -> Settings:
    pool = write_pool(tmp_path / "arena.toml", base_url, models)
    return Settings(
        env="test",
        data_dir=tmp_path / "data",
        database_url=database_url,
        config=pool,
        secret_key="test-secret-key",
        **overrides,
    )


@pytest.fixture
def settings(tmp_path, database_url, openai_server):
    """A pool where one side always fails with HTTP 500."""
    return arena_settings(tmp_path, database_url, openai_server[0], {"good": "echo-good", "bad": "error-500"})


class TestFailedSide:
    async def test_error_is_shown_and_battle_cannot_be_voted(self, client, app, photo_bytes):
        created = await start_battle(client, photo_bytes)
        events = parse_sse((await client.get(created["events_url"])).text)
        errors = [data for name, data in events if name == "error"]
        assert len(errors) == 1 and "HTTP 500 (server error): simulated failure 500" in errors[0]["message"]
        assert "ready" not in [name for name, _ in events]
        assert events[-1] == ("end", {"status": "failed"})
        vote = await client.post(f"/api/battles/{created['battle_id']}/vote", json={"choice": "a"})
        assert vote.status_code == 409 and vote.json()["error"] == "side_failed"
        with app.state.services.database.sessions() as session:
            statuses = {r.contender: (r.status, r.error) for r in session.scalars(select(Response))}
        assert statuses["good"][0] == "done"
        assert statuses["bad"][0] == "error" and "500" in statuses["bad"][1]


class TestAbandonedBattle:
    async def test_disconnect_cancels_upstream_and_marks_abandoned(
        self, tmp_path, database_url, openai_server, photo_bytes
    ):
        settings = arena_settings(
            tmp_path, database_url, openai_server[0], {"slow-one": "slow-one", "slow-two": "slow-two"}
        )
        cut_off_before = openai_server[1].cut_off
        # A real server: the disconnect must travel over a real socket.
        with serve_in_thread(create_app(settings)) as url:
            async with httpx.AsyncClient(base_url=url, timeout=10) as client:
                created = await start_battle(client, photo_bytes)
                cookies = dict(client.cookies)  # the starter's voter cookie: only it may vote
                async with client.stream("GET", created["events_url"]) as events:
                    streaming: set[str] = set()
                    async for line in events.aiter_lines():
                        if line.startswith("data: ") and '"side"' in line:
                            streaming.add(json.loads(line.removeprefix("data: "))["side"])
                        if streaming == {"a", "b"}:
                            break  # both answers are streaming: walk away
            sessions = make_sessionmaker(make_engine(settings.resolved_database_url))
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                with sessions() as session:
                    battle = session.get(Battle, created["battle_id"])
                    if battle.status == "abandoned":
                        break
                await asyncio.sleep(0.1)
            with sessions() as session:
                assert session.get(Battle, created["battle_id"]).status == "abandoned"
                responses = session.scalars(select(Response)).all()
                assert {r.status for r in responses} == {"abandoned"}
                assert any(r.text for r in responses)  # the partial answer is kept for the record
            # both upstream calls were cancelled (the model server notices at its next write)
            deadline = time.monotonic() + 5
            while openai_server[1].cut_off - cut_off_before < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert openai_server[1].cut_off - cut_off_before == 2
            async with httpx.AsyncClient(base_url=url, cookies=cookies) as client:
                vote = await client.post(f"/api/battles/{created['battle_id']}/vote", json={"choice": "a"})
                assert vote.status_code == 409
                replay = parse_sse((await client.get(created["events_url"])).text)
                assert replay[-1] == ("end", {"status": "abandoned"})


class TestCancelledRun:
    @pytest.fixture
    def settings(self, tmp_path, database_url, openai_server):
        return arena_settings(
            tmp_path, database_url, openai_server[0], {"slow-one": "slow-one", "slow-two": "slow-two"}
        )

    async def test_a_watcher_still_connected_gets_end_when_the_run_stops(self, client, app, photo_bytes):
        """`end` is always the last event: a run stopped under a watcher (shutdown,
        or a watcher joining just as the last one left) must say so, not go quiet."""
        created = await start_battle(client, photo_bytes)
        runs = app.state.services.battle_runs
        events = await runs.open(created["battle_id"])
        assert events is not None
        assert await anext(events) == "retry: 1000\n\n"  # the hint comes first
        first = await asyncio.wait_for(anext(events), 10)
        await runs.shutdown()

        async def rest() -> str:
            return "".join([chunk async for chunk in events])

        tail = await asyncio.wait_for(rest(), 5)
        assert parse_sse(first + tail)[-1] == ("end", {"status": "abandoned"})
        with app.state.services.database.sessions() as session:
            assert session.get(Battle, created["battle_id"]).status == "abandoned"

    async def test_a_run_nobody_follows_is_cancelled(self, client, app, photo_bytes):
        """A stream opened (its battle claimed and started) whose client left before the
        response began: nobody will watch, so the run stops after the lease."""
        created = await start_battle(client, photo_bytes)
        runs = app.state.services.battle_runs
        runs.lease = 0.3
        assert await runs.open(created["battle_id"]) is not None  # never iterated
        for _ in range(100):
            with app.state.services.database.sessions() as session:
                if session.get(Battle, created["battle_id"]).status == "abandoned":
                    break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the unwatched run kept going")

    async def test_an_unknown_battle_opens_no_stream(self, app):
        assert await app.state.services.battle_runs.open("no-such-battle") is None


class TestShutdownWhileStoring:
    @pytest.fixture
    def settings(self, tmp_path, database_url, openai_server):
        return arena_settings(tmp_path, database_url, openai_server[0], {"quick": "echo-quick", "slow": "slow-one"})

    async def test_an_answer_being_stored_lands_before_shutdown_returns(self, client, app, photo_bytes, monkeypatch):
        """An answer is stored in a worker thread, which cancelling its run does not stop; the
        lifespan disposes the engine once `shutdown` returns, so `shutdown` waits for the write."""
        from arena.battles import repository

        real = repository.update_response
        storing, release = threading.Event(), threading.Event()

        def held(session, battle_id, side, **values):
            if values.get("status") == "done":
                storing.set()
                release.wait(10)
            return real(session, battle_id, side, **values)

        monkeypatch.setattr(repository, "update_response", held)
        created = await start_battle(client, photo_bytes)
        runs = app.state.services.battle_runs
        assert await runs.open(created["battle_id"]) is not None
        assert await asyncio.to_thread(storing.wait, 10)  # the quick side's answer is being written
        stopping = asyncio.create_task(runs.shutdown())
        await asyncio.sleep(0.5)
        assert not stopping.done()
        release.set()
        await asyncio.wait_for(stopping, 10)
        with app.state.services.database.sessions() as session:
            quick = session.scalars(select(Response).where(Response.contender == "quick")).one()
            assert quick.status == "done" and quick.text
            assert session.get(Battle, created["battle_id"]).status == "abandoned"


class TestDatabaseFault:
    @pytest.fixture
    def settings(self, tmp_path, database_url, openai_server):
        return arena_settings(tmp_path, database_url, openai_server[0], {"one": "echo-one", "two": "echo-two"})

    async def test_a_failed_write_ends_the_stream_as_failed(self, client, app, photo_bytes, monkeypatch):
        """A database error while storing one side (a failover, a locked SQLite
        file) must not leave the stream open forever and the battle running."""
        from sqlalchemy.exc import OperationalError

        from arena.battles import repository

        real = repository.update_response

        def flaky(session, battle_id, side, **values):
            if side == "a" and values.get("status") == "done":
                raise OperationalError("UPDATE responses", {}, Exception("server closed the connection"))
            return real(session, battle_id, side, **values)

        monkeypatch.setattr(repository, "update_response", flaky)
        created = await start_battle(client, photo_bytes)
        response = await asyncio.wait_for(client.get(created["events_url"]), 10)
        events = parse_sse(response.text)
        assert events[-1] == ("end", {"status": "failed"})
        assert "ready" not in [name for name, _ in events]
        with app.state.services.database.sessions() as session:
            assert session.get(Battle, created["battle_id"]).status == "failed"
        vote = await client.post(f"/api/battles/{created['battle_id']}/vote", json={"choice": "a"})
        assert vote.status_code == 409


class TestMissingImage:
    async def test_a_battle_whose_photo_is_gone_ends_failed(self, client, app, photo_bytes):
        """A replica that cannot read the photo (image store not shared, a disk
        lost) ends the battle as failed instead of leaving it claimed and running."""
        created = await start_battle(client, photo_bytes)
        for path in app.state.settings.image_dir.rglob("*.jpg"):
            path.unlink()
        response = await asyncio.wait_for(client.get(created["events_url"]), 10)
        events = parse_sse(response.text)
        assert events[-1] == ("end", {"status": "failed"})
        with app.state.services.database.sessions() as session:
            assert session.get(Battle, created["battle_id"]).status == "failed"


class TestReconnect:
    async def test_a_quick_reconnect_keeps_the_battle_alive(self, tmp_path, database_url, openai_server, photo_bytes):
        settings = arena_settings(
            tmp_path, database_url, openai_server[0], {"paced-one": "paced-one", "paced-two": "paced-two"}
        )
        with serve_in_thread(create_app(settings)) as url:
            async with httpx.AsyncClient(base_url=url, timeout=20) as client:
                created = await start_battle(client, photo_bytes)
                async with client.stream("GET", created["events_url"]) as events:
                    async for line in events.aiter_lines():
                        if line.startswith("event: delta"):
                            break  # the connection drops mid-answer...
                # ...and the browser is back a moment later, inside the grace
                body = (await client.get(created["events_url"])).text
        assert "retry: 1000" in body
        assert parse_sse(body)[-2:] == [("ready", {}), ("end", {"status": "ready"})]
