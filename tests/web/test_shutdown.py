"""A real `arena serve` and a real SIGTERM (issue 16, item 7): the replica
stops taking battles (503 with Retry-After, /readyz failing), lets the running
one finish within ARENA_SHUTDOWN_GRACE or abandons it when the grace runs out,
tells the stream of a battle it is not running to reconnect, then exits; and
its JSON log carries request ids, never the prompt or a client address."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import httpx

from tests.conftest import SAMPLE_DIR, write_pool
from tests.web.conftest import ArenaServer, serve_arena

PROMPT = "Where is the Zyxwvut tower in this photo?"  # a word to look for in the log


def pool_of(tmp_path: Path, openai_server, seconds: int) -> Path:  # type: ignore[no-untyped-def]
    base_url, _ = openai_server
    models = {"model-one": f"steady-{seconds}-one", "model-two": f"steady-{seconds}-two"}
    pool = write_pool(tmp_path / "arena.toml", base_url, models)
    pool.write_text(
        pool.read_text().replace("timeout = 10", "timeout = 60").replace("stall_timeout = 2", "stall_timeout = 5")
        + '\n[integrity]\nchallenge = "off"\n'
    )
    return pool


async def create(client: httpx.AsyncClient, url: str) -> httpx.Response:
    photo = (SAMPLE_DIR / "images" / "level1-1.jpg").read_bytes()
    return await client.post(
        f"{url}/api/battles", files={"image": ("p.jpg", photo, "image/jpeg")}, data={"prompt": PROMPT}
    )


def status_of(server: ArenaServer, battle_id: str) -> str:
    with sqlite3.connect(server.database) as db:
        return str(db.execute("SELECT status FROM battles WHERE id = ?", (battle_id,)).fetchone()[0])


def log_lines(server: ArenaServer) -> list[dict]:
    """The log's JSON lines; everything after `arena serve`'s one-line banner must be JSON."""
    text = server.log.read_text().splitlines()
    assert text and text[0].startswith("GeoArena on http://"), text[:3]
    return [json.loads(line) for line in text[1:] if line.strip()]


def stop_and_wait(server: ArenaServer, seconds: float = 60) -> int:
    assert server.process is not None
    return server.process.wait(timeout=seconds)


async def test_sigterm_drains_the_replica(tmp_path, openai_server):
    pool = pool_of(tmp_path, openai_server, seconds=6)
    env = {"ARENA_LOG_FORMAT": "json", "ARENA_SHUTDOWN_GRACE": "30"}
    with serve_arena(tmp_path, pool, env_extra=env) as server:
        assert server.process is not None
        async with httpx.AsyncClient(trust_env=False, timeout=60) as client:
            page = await client.get(f"{server.url}/", headers={"X-Request-ID": "probe-42"})
            assert page.headers["x-request-id"] == "probe-42"
            running = (await create(client, server.url)).json()
            waiting = (await create(client, server.url)).json()  # made, but its stream never opened here

            async with client.stream("GET", server.url + running["events_url"]) as events:
                lines = events.aiter_lines()
                async for line in lines:
                    if line.startswith("event: delta"):
                        break
                server.process.send_signal(signal.SIGTERM)

                refused = await create(client, server.url)
                assert refused.status_code == 503, refused.text
                assert refused.json()["error"] == "shutting_down"
                assert int(refused.headers["retry-after"]) > 0
                ready = await client.get(f"{server.url}/readyz")
                assert ready.status_code == 503 and ready.json()["checks"]["accepting"] == "failing"

                elsewhere = await client.get(server.url + waiting["events_url"])
                assert "event: reconnect" in elsewhere.text and "event: end" not in elsewhere.text

                rest = [line async for line in lines]  # the running battle goes on to its end
            assert "event: ready" in rest and any('"status": "ready"' in line for line in rest), rest[-5:]

        assert stop_and_wait(server) in (0, -signal.SIGTERM)
        assert status_of(server, running["battle_id"]) == "ready"
        assert status_of(server, waiting["battle_id"]) == "pending"  # another replica may run it

    records = log_lines(server)
    messages = [r["message"] for r in records]
    assert any(m.startswith("SIGTERM: taking no new battles; 1 running") for m in messages), messages
    assert "drained: 1 battle(s) finished, 0 abandoned; stopping" in messages
    access = [r for r in records if r["logger"] == "arena.access"]
    probed = [r for r in access if r.get("request_id") == "probe-42"]
    assert len(probed) == 1 and probed[0]["message"].startswith("GET / 200"), probed
    assert all(r.get("request_id") for r in access)
    assert any(r["message"].startswith("POST /api/battles 503") for r in access)
    log = server.log.read_text()
    assert "Zyxwvut" not in log  # no prompt text
    # no client address (the clients are 127.0.0.1 here): nothing logged while a request
    # was handled names it; outside requests only the server's own and the contenders' do
    for record in records:
        if record.get("request_id"):
            assert "127.0.0.1" not in record["message"], record


async def test_a_battle_past_the_grace_is_abandoned(tmp_path, openai_server):
    pool = pool_of(tmp_path, openai_server, seconds=60)
    env = {"ARENA_LOG_FORMAT": "json", "ARENA_SHUTDOWN_GRACE": "1"}
    with serve_arena(tmp_path, pool, env_extra=env) as server:
        assert server.process is not None
        async with httpx.AsyncClient(trust_env=False, timeout=60) as client:
            battle = (await create(client, server.url)).json()
            async with client.stream("GET", server.url + battle["events_url"]) as events:
                lines = events.aiter_lines()
                async for line in lines:
                    if line.startswith("event: delta"):
                        break
                server.process.send_signal(signal.SIGTERM)
                rest = [line async for line in lines]
        assert any('"status": "abandoned"' in line for line in rest), rest[-5:]
        assert stop_and_wait(server) in (0, -signal.SIGTERM)
        assert status_of(server, battle["battle_id"]) == "abandoned"
    assert "drained: 0 battle(s) finished, 1 abandoned; stopping" in [r["message"] for r in log_lines(server)]
