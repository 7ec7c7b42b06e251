"""Many battles at once on one `arena serve` (issue 16, item 9).

Measured before: 200 battles opened together (400 upstream streams) on the
shared client's one pool of 100 connections failed 41 with `PoolTimeout`.
Now each provider has a pool sized for the battles the replica accepts
(two streams a battle), and a battle past `ARENA_MAX_BATTLES` is refused
with 503 and Retry-After before its photo is read, never failed midway.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
import sqlalchemy

from arena.app import create_app
from arena.config import PoolConfig, Settings, origin_of
from tests.conftest import SAMPLE_DIR, write_pool
from tests.web.conftest import serve_arena

BATTLES = 55  # 110 upstream streams: more than httpx's default pool of 100
ANSWER_SECONDS = 12  # longer than the old 10 s wait for a pooled connection


def slow_pool(path: Path, base_url: str, answer_seconds: float) -> Path:
    contenders = "".join(
        f'[[contenders]]\nname = "{name}"\nprovider = "openai"\nbase_url = "{base_url}"\n'
        f'model = "steady-{answer_seconds:g}-{name}"\ntimeout = 60\n\n'
        for name in ("model-one", "model-two")
    )
    path.write_text(contenders + '[integrity]\nchallenge = "off"\nmin_read_seconds = 0\n')
    return path


async def create(client: httpx.AsyncClient, url: str, photo: bytes) -> httpx.Response:
    return await client.post(
        f"{url}/api/battles",
        files={"image": ("photo.jpg", photo, "image/jpeg")},
        data={"prompt": "Where was this photo taken?"},
    )


async def outcome(client: httpx.AsyncClient, url: str) -> str:
    """The stream's last `end` status."""
    status = ""
    async with client.stream("GET", url) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data:") and '"status"' in line:
                status = line
    return status


async def test_a_full_replica_refuses_new_battles_and_finishes_the_ones_it_took(tmp_path, openai_server, postgres_url):
    base_url, _ = openai_server
    pool = slow_pool(tmp_path / "arena.toml", base_url, ANSWER_SECONDS)
    photo = (SAMPLE_DIR / "images" / "level1-1.jpg").read_bytes()
    # a place held for a battle whose stream has not opened lapses after a lease: a long one
    # here, so a slow host making the 55 battles does not free places before the 56th
    env = {"ARENA_MAX_BATTLES": str(BATTLES), "ARENA_BATTLES_PER_MINUTE": "0", "ARENA_BATTLE_LEASE": "300"}
    with serve_arena(tmp_path, pool, database_url=postgres_url, env_extra=env) as server:
        limits = httpx.Limits(max_connections=BATTLES + 10)
        async with httpx.AsyncClient(trust_env=False, timeout=120, limits=limits) as client:
            gate = asyncio.Semaphore(8)  # uploads a few at a time, as people arrive

            async def one() -> httpx.Response:
                async with gate:
                    return await create(client, server.url, photo)

            made = await asyncio.gather(*(one() for _ in range(BATTLES)))
            assert [r.status_code for r in made] == [201] * BATTLES, made[0].text

            refused = await create(client, server.url, photo)
            assert refused.status_code == 503
            assert refused.headers["retry-after"].isdigit()
            assert "try again" in refused.json()["message"]

            ends = await asyncio.gather(*(outcome(client, server.url + r.json()["events_url"]) for r in made))
            assert all('"ready"' in end for end in ends), [e for e in ends if '"ready"' not in e][:3]

            # the places are free again
            again = await create(client, server.url, photo)
            assert again.status_code == 201, again.text
        log = server.log.read_text()
        assert "PoolTimeout" not in log and "Traceback" not in log, server.log_tail()


class TestConnectionSettings:
    def test_two_connections_a_battle_unless_told(self, tmp_path):
        assert Settings(config=tmp_path / "none.toml", max_battles=50).connections_for("https://a.example") == 100
        told = Settings(config=tmp_path / "none.toml", upstream_connections=30)
        assert told.connections_for("https://a.example") == 30

    def test_per_provider_in_the_pool_file(self, tmp_path):
        pool = tmp_path / "arena.toml"
        pool.write_text(
            '[[contenders]]\nname = "a"\nprovider = "baseline"\n[[contenders]]\nname = "b"\nprovider = "baseline"\n'
            '[connections]\n"https://api.openai.com" = 64\n'
        )
        settings = Settings(config=pool, max_battles=100)
        assert settings.connections_for("https://api.openai.com") == 64
        assert settings.connections_for("https://api.anthropic.com") == 200

    def test_origins(self):
        assert origin_of("https://API.openai.com:443/v1/") == "https://api.openai.com"
        assert origin_of("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080"
        assert origin_of("http://[::1]:9000/v1") == "http://[::1]:9000"
        assert origin_of("baseline") == ""

    def test_a_path_is_not_a_provider(self):
        with pytest.raises(ValueError, match="not an origin"):
            PoolConfig.model_validate({"connections": {"https://api.openai.com/v1": 10}})
        with pytest.raises(ValueError, match="at least 1"):
            PoolConfig.model_validate({"connections": {"https://api.openai.com": 0}})


class TestDatabaseConnections:
    def test_the_pool_keeps_what_it_opens_and_opens_no_more(self, postgres_url):
        """ARENA_DATABASE_CONNECTIONS connections, kept once opened: an overflow beyond a smaller
        kept pool closed each connection as it came back and opened another for the next."""
        from arena.db.session import make_engine

        engine = make_engine(postgres_url, 3)
        try:
            held = [engine.connect() for _ in range(3)]
            with pytest.raises(sqlalchemy.exc.TimeoutError):
                engine.pool._timeout = 0.2  # no waiting out the default 30 s for a fourth
                engine.connect()
            for connection in held:
                connection.close()
            assert engine.pool.checkedin() == 3  # all three kept for the next transactions
        finally:
            engine.dispose()

    async def test_the_server_sizes_its_pool_from_the_setting(self, tmp_path, postgres_url, monkeypatch):
        monkeypatch.setenv("ARENA_DATABASE_CONNECTIONS", "7")
        pool = write_pool(tmp_path / "arena.toml", "http://127.0.0.1:9/v1", {"one": "echo-one", "two": "echo-two"})
        told = Settings(env="test", data_dir=tmp_path / "data", database_url=postgres_url, config=pool)
        assert told.database_connections == 7
        application = create_app(told)
        async with application.router.lifespan_context(application):
            assert application.state.services.database.engine.pool.size() == 7
