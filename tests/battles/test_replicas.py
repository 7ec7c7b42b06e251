"""Two real `arena serve` processes on one PostgreSQL: a battle's events reach a
watcher on the other replica as they happen (LISTEN/NOTIFY), and are written
only when such a watcher asks; outage cool-downs are shared."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.engine import make_url

from arena.config import Settings
from arena.db.session import make_engine
from arena.db.tables import Battle, ContenderHealth
from tests.battles.replicas import Received, answer_text, collect, empty_database, events
from tests.conftest import write_pool
from tests.web.conftest import serve_arena

NO_READING_TIME = '\n[integrity]\nmin_read_seconds = 0\nread_chars_per_second = 1e9\nchallenge = "off"\n'


async def start(client: httpx.AsyncClient, base: str, photo: bytes) -> str:
    answer = await client.post(
        f"{base}/api/battles",
        files={"image": ("photo.jpg", photo, "image/jpeg")},
        data={"prompt": "Where was this taken?"},
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["battle_id"])


class TestEventsAcrossReplicas:
    async def test_a_watcher_on_the_other_replica_sees_each_delta_as_it_happens(
        self, postgres_url: str, tmp_path: Path, openai_server, photo_bytes: bytes
    ) -> None:
        base_url, _ = openai_server
        # paced contenders: five chunks, 0.4 s apart
        pool = write_pool(tmp_path / "arena.toml", base_url, {"paced-one": "paced-one", "paced-two": "paced-two"})
        pool.write_text(pool.read_text() + NO_READING_TIME)
        empty_database(postgres_url)
        with serve_arena(tmp_path, pool, postgres_url) as one, serve_arena(tmp_path, pool, postgres_url) as two:
            async with httpx.AsyncClient(timeout=30, trust_env=False) as browser:
                battle_id = await start(browser, one.url, photo_bytes)
                path = f"/api/battles/{battle_id}/events"
                runner_stream = events(browser, one.url + path)
                first = await anext(runner_stream)  # replica one has claimed and started the battle

                async def rest() -> list[Received]:
                    return [first] + [e async for e in runner_stream]

                on_one, on_two = await asyncio.gather(rest(), collect(browser, two.url + path))
                vote = await browser.post(f"{two.url}/api/battles/{battle_id}/vote", json={"choice": "a"})
                assert vote.status_code == 200, vote.text

        assert [e.name for e in on_two] == [e.name for e in on_one]
        for side in "ab":
            assert answer_text(on_two, side) == answer_text(on_one, side) != ""
        ready_one = next(e.at for e in on_one if e.name == "ready")
        deltas_one = [e for e in on_one if e.name == "delta"]
        deltas_two = [e for e in on_two if e.name == "delta"]
        # live, not a replay at the end: most of replica two's deltas arrived while the battle ran
        assert sum(e.at < ready_one - 0.5 for e in deltas_two) >= len(deltas_two) - 2
        lag_ms = [(b.at - a.at) * 1000 for a, b in zip(deltas_one, deltas_two, strict=True)]
        print(
            f"\nper-delta lag of the other replica: median {statistics.median(lag_ms):.1f} ms, max {max(lag_ms):.1f} ms"
        )
        assert statistics.median(lag_ms) < 250

    async def test_a_watcher_that_joins_late_gets_the_whole_battle(
        self, postgres_url: str, tmp_path: Path, openai_server, photo_bytes: bytes
    ) -> None:
        base_url, _ = openai_server
        pool = write_pool(tmp_path / "arena.toml", base_url, {"paced-one": "paced-one", "paced-two": "paced-two"})
        pool.write_text(pool.read_text() + NO_READING_TIME)
        empty_database(postgres_url)
        with serve_arena(tmp_path, pool, postgres_url) as one, serve_arena(tmp_path, pool, postgres_url) as two:
            async with httpx.AsyncClient(timeout=30, trust_env=False) as browser:
                battle_id = await start(browser, one.url, photo_bytes)
                path = f"/api/battles/{battle_id}/events"
                runner = asyncio.create_task(collect(browser, one.url + path))
                await asyncio.sleep(1.0)  # halfway through the answers
                on_two = await collect(browser, two.url + path)
                on_one = await runner
        assert [e.name for e in on_two] == [e.name for e in on_one]
        assert answer_text(on_two, "a") == answer_text(on_one, "a")


class TestSharedCooldowns:
    async def test_a_contender_cooled_down_on_one_replica_is_cooled_down_on_the_other(
        self, postgres_url: str, tmp_path: Path, openai_server, photo_bytes: bytes
    ) -> None:
        base_url, _ = openai_server
        pool = write_pool(
            tmp_path / "arena.toml", base_url, {"down": "error-500", "model-one": "echo-one", "model-two": "echo-two"}
        )
        pool.write_text(
            pool.read_text() + NO_READING_TIME + "\n[sampling]\nfailure_threshold = 1\ncooldown_seconds = 600\n"
        )
        empty_database(postgres_url)
        unlimited = {"ARENA_BATTLES_PER_MINUTE": "0"}
        with (
            serve_arena(tmp_path, pool, postgres_url, unlimited) as one,
            serve_arena(tmp_path, pool, postgres_url, unlimited) as two,
        ):
            async with httpx.AsyncClient(timeout=30, trust_env=False) as browser:
                for _ in range(30):  # until `down` is drawn on replica one and fails there
                    battle_id = await start(browser, one.url, photo_bytes)
                    await collect(browser, f"{one.url}/api/battles/{battle_id}/events")
                    if await _health(postgres_url):
                        break
                health = await _health(postgres_url)
                assert list(health) == ["down"]
                # replica two never failed it itself, and never draws it now
                drawn = [await start(browser, two.url, photo_bytes) for _ in range(15)]
        engine = make_engine(postgres_url)
        with engine.connect() as conn:
            pairs = conn.execute(select(Battle.model_a, Battle.model_b).where(Battle.id.in_(drawn))).all()
        engine.dispose()
        assert all("down" not in pair for pair in pairs), pairs


async def _health(url: str) -> dict[str, float]:
    def read() -> dict[str, float]:
        engine = make_engine(url)
        with engine.connect() as conn:
            rows = conn.execute(
                select(ContenderHealth.contender, ContenderHealth.cooling_until).where(
                    ContenderHealth.cooling_until > 0
                )
            ).all()
        engine.dispose()
        return {name: until for name, until in rows}

    return await asyncio.to_thread(read)


@pytest.fixture(autouse=True)
def _clean_after(postgres_url: str):  # type: ignore[no-untyped-def]
    yield
    empty_database(postgres_url)  # the other suites' PostgreSQL tests start from an empty database


class _PacedOnPostgres:
    """Paced contenders on PostgreSQL, where the relay is: SQLite runs as one process."""

    @pytest.fixture
    def database_url(self, postgres_url: str) -> str:
        empty_database(postgres_url)
        return postgres_url

    @pytest.fixture
    def settings(self, settings, tmp_path: Path, openai_server):  # type: ignore[no-untyped-def]
        base_url, _ = openai_server
        pool = write_pool(tmp_path / "paced.toml", base_url, {"paced-one": "paced-one", "paced-two": "paced-two"})
        pool.write_text(pool.read_text() + NO_READING_TIME)
        return settings.model_copy(update={"config": pool})


class TestRelayOutage(_PacedOnPostgres):
    async def test_watchers_keep_up_while_the_listen_connection_is_cut_and_it_comes_back(
        self, settings, photo_bytes: bytes
    ) -> None:
        from arena.battles.relay import APPLICATION_NAME

        async with _two_replicas(settings) as (first, second, one, two):
            relay = second.state.services.battle_runs.relay
            await asyncio.wait_for(relay.listening.wait(), 10)
            battle_id = await start(one, "", photo_bytes)
            path = f"/api/battles/{battle_id}/events"
            # ASGITransport hands over a response once the app has sent all of it: the
            # streams run as tasks, the watcher joining while the battle runs
            runner = asyncio.create_task(collect(one, path))
            await asyncio.sleep(0.5)
            assert not runner.done()
            watcher = asyncio.create_task(collect(two, path))
            await asyncio.sleep(0.3)
            cut = await asyncio.to_thread(_terminate, settings.resolved_database_url, APPLICATION_NAME)
            assert cut >= 1
            on_one = await asyncio.wait_for(runner, 20)
            on_two = await asyncio.wait_for(watcher, 20)
            await asyncio.wait_for(relay.listening.wait(), 10)  # and it is listening again
        assert [e.name for e in on_two] == [e.name for e in on_one]
        assert answer_text(on_two, "a") == answer_text(on_one, "a") != ""

    async def test_a_watcher_announced_while_the_connections_are_cut_still_gets_every_event(
        self, settings, openai_server, tmp_path: Path, photo_bytes: bytes
    ) -> None:
        from arena.battles.relay import APPLICATION_NAME

        base_url, _ = openai_server
        pool = write_pool(tmp_path / "steady.toml", base_url, {"one": "steady-6-one", "two": "steady-6-two"})
        pool.write_text(pool.read_text() + NO_READING_TIME)
        settings = settings.model_copy(update={"config": pool})
        async with _two_replicas(settings) as (first, _, one, two):
            relay = first.state.services.battle_runs.relay
            await asyncio.wait_for(relay.listening.wait(), 10)
            battle_id = await start(one, "", photo_bytes)
            path = f"/api/battles/{battle_id}/events"
            runner = asyncio.create_task(collect(one, path))
            await asyncio.sleep(0.5)
            cut = await asyncio.to_thread(_terminate, settings.resolved_database_url, APPLICATION_NAME)
            assert cut >= 1
            # the runner's LISTEN is down: this watcher's announcement is lost, and the
            # runner writes its battles' events once it listens again
            on_two = await asyncio.wait_for(collect(two, path), 30)
            on_one = await asyncio.wait_for(runner, 30)
        assert [e.name for e in on_two] == [e.name for e in on_one]
        assert answer_text(on_two, "b") == answer_text(on_one, "b") != ""


@asynccontextmanager
async def _two_replicas(
    settings: Settings,
) -> AsyncIterator[tuple[FastAPI, FastAPI, httpx.AsyncClient, httpx.AsyncClient]]:
    """Two replicas in one process, started, each with its own client (`one`, `two`)."""
    from arena.app import create_app

    first, second = create_app(settings), create_app(settings)
    async with first.router.lifespan_context(first), second.router.lifespan_context(second):
        async with (
            httpx.AsyncClient(transport=httpx.ASGITransport(app=first), base_url="http://one") as one,
            httpx.AsyncClient(transport=httpx.ASGITransport(app=second), base_url="http://two") as two,
        ):
            yield first, second, one, two


def _terminate(url: str, application_name: str) -> int:
    """Cut the relays' LISTEN connections from the server side, as a failover or restart would."""
    from sqlalchemy import text

    engine = make_engine(url)
    with engine.begin() as conn:
        cut = conn.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = :name AND datname = current_database()"
            ),
            {"name": application_name},
        ).scalar_one()
    engine.dispose()
    return int(cut)


class TestEventsOnlyWhenWatchedElsewhere(_PacedOnPostgres):
    """A replica writes a battle's events only once a watcher elsewhere announces itself
    (NOTIFY arena_battle_watch): a battle watched only where it runs writes none."""

    async def test_no_rows_without_a_watcher_elsewhere_and_all_of_them_once_one_asked(
        self, settings, photo_bytes: bytes
    ) -> None:
        from arena.app import create_app

        app = create_app(settings)
        async with app.router.lifespan_context(app):
            runs = app.state.services.battle_runs
            await asyncio.wait_for(runs.relay.listening.wait(), 10)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://one") as one:
                alone = await start(one, "", photo_bytes)
                watched_here = await collect(one, f"/api/battles/{alone}/events")

                # a watcher elsewhere asks before the run starts (the battle is still pending)
                asked = await start(one, "", photo_bytes)
                await asyncio.to_thread(_announce, settings.resolved_database_url, asked)
                for _ in range(100):
                    if asked in runs._announced:
                        break
                    await asyncio.sleep(0.05)
                on_one = await collect(one, f"/api/battles/{asked}/events")
        assert watched_here[-1].name == "end" and _event_rows(settings.resolved_database_url, alone) == []
        # the whole battle, from its first event, for the watcher who asked (its last rows may
        # be a moment behind the `end` the stream here sent)
        expected = [(seq, e.name) for seq, e in enumerate(on_one, 1)]
        for _ in range(100):
            if _event_rows(settings.resolved_database_url, asked) == expected:
                break
            await asyncio.sleep(0.05)
        assert _event_rows(settings.resolved_database_url, asked) == expected

    async def test_a_watcher_that_asks_just_after_the_end_has_its_doorbell_rung(
        self, settings, photo_bytes: bytes
    ) -> None:
        from arena.app import create_app
        from arena.battles.relay import CHANNEL

        app = create_app(settings)
        async with app.router.lifespan_context(app):
            await asyncio.wait_for(app.state.services.battle_runs.relay.listening.wait(), 10)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://one") as one:
                battle_id = await start(one, "", photo_bytes)
                await collect(one, f"/api/battles/{battle_id}/events")
            dsn = make_url(settings.resolved_database_url).set(drivername="postgresql")
            async with await psycopg.AsyncConnection.connect(
                dsn.render_as_string(hide_password=False), autocommit=True
            ) as listener:
                await listener.execute(f"LISTEN {CHANNEL}")
                # as a watcher on another replica that found the battle still running a moment ago
                await asyncio.to_thread(_announce, settings.resolved_database_url, battle_id)
                rung = await asyncio.wait_for(anext(listener.notifies()), 10)
        assert rung.payload == battle_id  # it looks again and finds the stored replay
        assert _event_rows(settings.resolved_database_url, battle_id) == []


def _announce(url: str, battle_id: str) -> None:
    from arena.battles.relay import announce_watcher
    from arena.db.session import make_sessionmaker

    engine = make_engine(url)
    with make_sessionmaker(engine).begin() as session:
        announce_watcher(session, battle_id)
    engine.dispose()


def _event_rows(url: str, battle_id: str) -> list[tuple[int, str]]:
    from arena.db.tables import BattleEventRow

    engine = make_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(
            select(BattleEventRow.seq, BattleEventRow.name)
            .where(BattleEventRow.battle_id == battle_id)
            .order_by(BattleEventRow.seq)
        ).all()
    engine.dispose()
    return [(seq, name) for seq, name in rows]
