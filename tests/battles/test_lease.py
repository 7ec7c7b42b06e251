"""Battles cut off with their replica (kill -9, a database outage) do not stay `running`:
they are abandoned at start-up and by the lease their runner renews."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from arena.app import create_app
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Battle, Response, utcnow
from tests.battles.test_failures import arena_settings
from tests.battles.test_flow import parse_sse, start_battle


def age(database_url: str, battle_id: str, seconds: float, status: str = "running") -> None:
    """Make a battle look as if its replica died `seconds` ago while running it."""
    engine = make_engine(database_url)
    with make_sessionmaker(engine).begin() as session:
        session.execute(
            update(Battle)
            .where(Battle.id == battle_id)
            .values(status=status, updated_at=utcnow() - timedelta(seconds=seconds))
        )
        session.execute(update(Response).where(Response.battle_id == battle_id).values(status="streaming"))
    engine.dispose()


class TestStaleBattles:
    async def test_start_up_abandons_what_a_killed_replica_left_running(
        self, settings, client, app, photo_bytes, database_url
    ):
        old = (await start_battle(client, photo_bytes))["battle_id"]
        fresh = (await start_battle(client, photo_bytes))["battle_id"]
        age(database_url, old, 120)
        age(database_url, fresh, 1)  # another replica's, still within its lease
        restarted = create_app(settings)
        async with restarted.router.lifespan_context(restarted):
            with restarted.state.services.database.sessions() as session:
                statuses = dict(session.execute(select(Battle.id, Battle.status)).all())
                sides = {r.status for r in session.scalars(select(Response).where(Response.battle_id == old))}
        assert statuses[old] == "abandoned" and statuses[fresh] == "running"
        assert sides == {"abandoned"}

    @pytest.fixture
    def settings(self, settings):
        return settings.model_copy(update={"battle_lease": 2.0})

    async def test_a_viewer_waits_a_lease_not_the_battle_timeout(self, client, app, photo_bytes, database_url):
        created = await start_battle(client, photo_bytes)
        age(database_url, created["battle_id"], 0)  # claimed by a replica that then died
        started = time.monotonic()
        events = parse_sse((await client.get(created["events_url"])).text)
        waited = time.monotonic() - started
        assert events[-1] == ("end", {"status": "abandoned"})
        assert waited < 2.0 + 3  # the lease and a poll, instead of battle_timeout + 30 s


class TestLeaseRenewal:
    @pytest.fixture
    def settings(self, tmp_path, database_url, openai_server):
        return arena_settings(
            tmp_path, database_url, openai_server[0], {"slow-one": "slow-one", "slow-two": "slow-two"}, battle_lease=0.6
        )

    async def test_a_long_battle_keeps_its_lease(self, client, app, photo_bytes):
        created = await start_battle(client, photo_bytes)
        stream = asyncio.ensure_future(client.get(created["events_url"]))
        seen = []
        for _ in range(8):
            await asyncio.sleep(0.5)
            with app.state.services.database.sessions() as session:
                seen.append(session.get(Battle, created["battle_id"]).updated_at)
        # renewed every 0.2 s while it runs (a watcher on another replica would abandon it otherwise)
        assert len(set(seen)) >= 5
        with app.state.services.database.sessions() as session:
            assert session.get(Battle, created["battle_id"]).status == "running"
        stream.cancel()
