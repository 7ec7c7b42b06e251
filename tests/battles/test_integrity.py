"""Vote integrity at vote time: the starter's cookie, daily limits (held across
two app processes on one PostgreSQL), reading time, the challenge, no cross-site writes."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, text

from arena.battles import integrity
from arena.db.session import make_engine
from arena.db.tables import Base, Battle
from arena.export.db import export_rows
from arena.ratings.job import rank_database
from arena.ratings.leaderboard import RankOptions
from tests.battles.test_flow import start_battle
from tests.conftest import write_pool
from tests.web.conftest import serve_arena


def with_integrity(settings, tmp_path: Path, openai_server, **values: object):  # type: ignore[no-untyped-def]
    """The test settings with an `[integrity]` table in the pool file."""
    base_url, _ = openai_server
    pool = write_pool(tmp_path / "integrity.toml", base_url, {"model-one": "echo-one", "model-two": "echo-two"})
    lines = ["", "[integrity]"] + [f"{k} = {_toml(v)}" for k, v in values.items()]
    pool.write_text(pool.read_text() + "\n".join(lines) + "\n")
    return settings.model_copy(update={"config": pool})


def _toml(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)


async def ready_battle(client: httpx.AsyncClient, photo: bytes, base: str = "") -> str:
    created = await client.post(
        f"{base}/api/battles", files={"image": ("p.jpg", photo, "image/jpeg")}, data={"prompt": "Where was this taken?"}
    )
    assert created.status_code == 201, created.text
    body = created.json()
    events = await client.get(f"{base}{body['events_url']}")
    assert '"status": "ready"' in events.text or "ready" in events.text
    return body["battle_id"]


class TestSameClient:
    async def test_only_the_starting_browser_may_vote(self, client, app, photo_bytes):
        created = await start_battle(client, photo_bytes)
        await client.get(created["events_url"])
        url = f"/api/battles/{created['battle_id']}/vote"
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as stranger:
            anonymous = await stranger.post(url, json={"choice": "a"})
            assert anonymous.status_code == 403 and anonymous.json()["error"] == "not_your_battle"
            stranger.cookies.set("arena_voter", "someone-else")
            other = await stranger.post(url, json={"choice": "a"})
            assert other.status_code == 403 and "started the battle" in other.json()["message"]
        mine = await client.post(url, json={"choice": "a"})
        assert mine.status_code == 200


class TestReadingTime:
    @pytest.fixture
    def settings(self, settings, tmp_path, openai_server):
        return with_integrity(settings, tmp_path, openai_server, min_read_seconds=30, max_read_seconds=30)

    async def test_a_vote_at_once_is_stored_flagged_and_not_rated(self, client, app, photo_bytes):
        battle_id = await ready_battle(client, photo_bytes)
        vote = await client.post(f"/api/battles/{battle_id}/vote", json={"choice": "a"})
        assert vote.status_code == 200  # taken: the person sees the reveal either way
        with app.state.services.database.sessions() as session:
            assert session.get(Battle, battle_id).flags == ["too_fast"]
            rows = list(export_rows(session))
        assert rows[0]["flags"] == ["too_fast"]
        snapshot = rank_database(app.state.services.database.sessions, RankOptions(rounds=2, style=False))
        assert snapshot["excluded"] == {"flagged:too_fast": 1} and snapshot["votes_used"] == 0

    def test_reading_time_scales_with_length(self):
        config = integrity.IntegrityConfig(min_read_seconds=2, read_chars_per_second=50, max_read_seconds=20)
        assert integrity.reading_seconds(config, "", "") == 2
        assert integrity.reading_seconds(config, "x" * 100, "y" * 150) == 7
        assert integrity.reading_seconds(config, "x" * 10_000, "") == 20


class TestReadAtLeisure:
    @pytest.fixture
    def settings(self, settings, tmp_path, openai_server):
        return with_integrity(settings, tmp_path, openai_server, min_read_seconds=0, read_chars_per_second=1e9)

    async def test_a_vote_after_reading_is_not_flagged(self, client, app, photo_bytes):
        battle_id = await ready_battle(client, photo_bytes)
        assert (await client.post(f"/api/battles/{battle_id}/vote", json={"choice": "b"})).status_code == 200
        with app.state.services.database.sessions() as session:
            assert session.get(Battle, battle_id).flags == []


class TestChallenge:
    @pytest.fixture
    def settings(self, settings, tmp_path, openai_server):
        return with_integrity(settings, tmp_path, openai_server, challenge="always", challenge_bits=8)

    async def test_a_script_that_skips_it_is_refused(self, client, photo_bytes):
        refused = await client.post(
            "/api/battles", files={"image": ("p.jpg", photo_bytes, "image/jpeg")}, data={"prompt": "Where?"}
        )
        assert refused.status_code == 428 and refused.json()["error"] == "challenge_required"

    async def test_solved_once_starts_one_battle(self, client, app, photo_bytes):
        puzzle = (await client.get("/api/challenge")).json()
        assert puzzle["required"] and puzzle["bits"] == 8
        # one guess in 2**8 solves an 8-bit puzzle by luck: take a guess that does not
        misses = (f"not-it-{i}" for i in range(100))
        guess = next(m for m in misses if not _solves(puzzle["token"], m, puzzle["bits"]))
        wrong = await self._post(client, photo_bytes, puzzle["token"], guess)
        assert wrong.status_code == 403 and wrong.json()["error"] == "challenge_unsolved"
        answer = solve(puzzle["token"], puzzle["bits"])
        assert (await self._post(client, photo_bytes, puzzle["token"], answer)).status_code == 201
        again = await self._post(client, photo_bytes, puzzle["token"], answer)
        assert again.status_code == 403 and again.json()["error"] == "challenge_spent"
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as other:
            other.cookies.set("arena_voter", "another-browser")
            stolen = await self._post(other, photo_bytes, puzzle["token"], answer)
            assert stolen.status_code == 403 and stolen.json()["error"] == "challenge_invalid"

    @staticmethod
    async def _post(client, photo, token, solution):  # type: ignore[no-untyped-def]
        return await client.post(
            "/api/battles",
            files={"image": ("p.jpg", photo, "image/jpeg")},
            data={"prompt": "Where was this taken?", "challenge": token, "solution": solution},
        )


class TestChallengeOnRisk:
    @pytest.fixture
    def settings(self, settings, tmp_path, openai_server):
        return with_integrity(settings, tmp_path, openai_server, risk_battles_per_day=3, challenge_bits=6)

    async def test_an_ordinary_client_is_not_challenged_a_busy_one_is(self, client, photo_bytes):
        for _ in range(3):
            assert (await client.get("/api/challenge")).json() == {"required": False}
            await start_battle(client, photo_bytes)
        puzzle = (await client.get("/api/challenge")).json()
        assert puzzle["required"] and puzzle["bits"] == 6 + integrity.RISK_BITS_MANY_BATTLES
        refused = await client.post(
            "/api/battles", files={"image": ("p.jpg", photo_bytes, "image/jpeg")}, data={"prompt": "Where?"}
        )
        assert refused.status_code == 428


class TestCrossSite:
    async def test_cross_site_writes_are_refused_with_a_reason(self, client, photo_bytes):
        files = {"image": ("p.jpg", photo_bytes, "image/jpeg")}
        for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}, {"Origin": "null"}):
            refused = await client.post("/api/battles", files=files, data={"prompt": "Where?"}, headers=headers)
            assert refused.status_code == 403 and refused.json()["error"] == "cross_site", headers
            assert "refused because" in refused.json()["message"]
        vote = await client.post(
            "/api/battles/" + "f" * 32 + "/vote", json={"choice": "a"}, headers={"Origin": "https://evil.example"}
        )
        assert vote.status_code == 403
        same = await client.post(
            "/api/battles",
            files=files,
            data={"prompt": "Where was this taken?"},
            headers={"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"},
        )
        assert same.status_code == 201
        assert (await client.get("/api/leaderboard", headers={"Origin": "https://evil.example"})).status_code == 200


class TestAddresses:
    def test_ipv6_counts_by_its_64_and_ipv4_by_address(self):
        assert integrity.address_key("2001:db8:1:2:aaaa::1") == integrity.address_key("2001:db8:1:2:bbbb::9")
        assert integrity.address_key("2001:db8:1:3::1") != integrity.address_key("2001:db8:1:2::1")
        assert integrity.address_key("::ffff:192.0.2.7") == "192.0.2.7"
        assert integrity.address_key("192.0.2.7") != integrity.address_key("192.0.2.8")


@pytest.mark.postgres
class TestLimitsAcrossReplicas:
    async def test_daily_limits_hold_across_two_app_processes(self, postgres_url, tmp_path, openai_server, photo_bytes):
        base_url, _ = openai_server
        pool = write_pool(tmp_path / "arena.toml", base_url, {"model-one": "echo-one", "model-two": "echo-two"})
        pool.write_text(
            pool.read_text() + '\n[integrity]\nvotes_per_day = 3\nvotes_per_address_per_day = 5\nchallenge = "off"\n'
        )
        engine = make_engine(postgres_url)
        with engine.begin() as conn:
            conn.execute(
                text(f"TRUNCATE {', '.join(t.name for t in Base.metadata.sorted_tables)} RESTART IDENTITY CASCADE")
            )
        engine.dispose()
        with serve_arena(tmp_path, pool, postgres_url) as one, serve_arena(tmp_path, pool, postgres_url) as two:
            servers = [one.url, two.url]
            async with httpx.AsyncClient(timeout=30, trust_env=False) as browser:
                battles = [await ready_battle(browser, photo_bytes, servers[i % 2]) for i in range(6)]
                # six votes at once, alternating replicas: exactly three get through
                answers = await asyncio.gather(
                    *[
                        browser.post(f"{servers[i % 2]}/api/battles/{b}/vote", json={"choice": "a"})
                        for i, b in enumerate(battles)
                    ]
                )
                codes = sorted(r.status_code for r in answers)
                assert codes == [200, 200, 200, 429, 429, 429], [r.text for r in answers]
                refused = next(r for r in answers if r.status_code == 429)
                assert int(refused.headers["Retry-After"]) > 0
                assert refused.json()["error"] == "vote_limit" and "votes today" in refused.json()["message"]
            # another browser at the same address: the address allows two more votes today
            async with httpx.AsyncClient(timeout=30, trust_env=False) as second:
                more = [await ready_battle(second, photo_bytes, servers[i % 2]) for i in range(3)]
                codes = [
                    (await second.post(f"{servers[i % 2]}/api/battles/{b}/vote", json={"choice": "b"})).status_code
                    for i, b in enumerate(more)
                ]
                assert codes == [200, 200, 429]
        engine = make_engine(postgres_url)
        with engine.connect() as conn:
            voted = conn.execute(select(Battle.id).where(Battle.status == "voted")).all()
        engine.dispose()
        assert len(voted) == 5


def solve(token: str, bits: int) -> str:
    n = 0
    while not _solves(token, str(n), bits):
        n += 1
    return str(n)


def _solves(token: str, solution: str, bits: int) -> bool:
    return integrity.leading_zero_bits(hashlib.sha256(f"{token}:{solution}".encode()).digest()) >= bits


class TestTooFastIsARiskSignal:
    @pytest.fixture
    def settings(self, settings, tmp_path, openai_server):
        return with_integrity(settings, tmp_path, openai_server, min_read_seconds=30, challenge_bits=5)

    async def test_a_habit_of_voting_before_reading_brings_the_challenge(self, client, photo_bytes):
        for _ in range(integrity.TOO_FAST_TOLERATED):
            assert (await client.get("/api/challenge")).json() == {"required": False}
            battle_id = await ready_battle(client, photo_bytes)
            assert (await client.post(f"/api/battles/{battle_id}/vote", json={"choice": "a"})).status_code == 200
        puzzle = (await client.get("/api/challenge")).json()
        assert puzzle["required"] and puzzle["bits"] == 5 + integrity.RISK_BITS_TOO_FAST
