"""A replica's `ARENA_MAX_BATTLES` places, counted right when battles cross replicas (or the
workers of `arena serve --workers N`, each its own process) and when a battle is slow to make.

Before: a battle made on one replica and streamed on another held a place on the first until
its lease lapsed, and a place held by a creation still in progress lapsed after a lease too,
so a creation slower than the lease let one battle too many in."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from tests.battles.replicas import collect, empty_database, events
from tests.battles.test_capacity import create, slow_pool
from tests.web.conftest import serve_arena

ONE_PLACE = {"ARENA_MAX_BATTLES": "1", "ARENA_BATTLES_PER_MINUTE": "0"}


async def created_once_room(client: httpx.AsyncClient, url: str, photo: bytes, within: float = 10) -> httpx.Response:
    """A battle made on `url` as soon as it has a place (a run leaves it a moment after its `end`)."""
    deadline = time.monotonic() + within
    while True:
        made = await create(client, url, photo)
        if made.status_code != 503 or time.monotonic() > deadline:
            return made
        await asyncio.sleep(0.1)


async def test_a_battle_streamed_on_another_replica_holds_its_place_there(
    tmp_path: Path, openai_server, postgres_url: str, photo_bytes: bytes
) -> None:
    base_url, _ = openai_server
    pool = slow_pool(tmp_path / "arena.toml", base_url, 3)
    empty_database(postgres_url)
    env = ONE_PLACE | {"ARENA_BATTLE_LEASE": "300"}  # a lapse cannot be what frees a place here
    with (
        serve_arena(tmp_path, pool, postgres_url, env) as one,
        serve_arena(tmp_path, pool, postgres_url, env) as two,
    ):
        async with httpx.AsyncClient(timeout=60, trust_env=False) as browser:
            made = await create(browser, one.url, photo_bytes)
            assert made.status_code == 201, made.text
            on_two = events(browser, two.url + made.json()["events_url"])
            first = await anext(on_two)  # replica two has claimed the battle and runs it
            assert first.name in ("delta", "step")

            # the place went with the battle: replica one takes another, replica two is full
            again = await create(browser, one.url, photo_bytes)
            assert again.status_code == 201, again.text
            refused = await create(browser, two.url, photo_bytes)
            assert refused.status_code == 503 and refused.json()["error"] == "arena_full"
            assert refused.headers["retry-after"].isdigit()

            # the battle made a moment ago on replica one is not streamed: it holds one's place
            assert (await create(browser, one.url, photo_bytes)).status_code == 503

            rest = [e async for e in on_two]
            assert rest[-1].name == "end" and rest[-1].data["status"] == "ready"
            # replica two ran it and so frees its place
            after = await created_once_room(browser, two.url, photo_bytes)
            assert after.status_code == 201, after.text
            ended = await collect(browser, one.url + after.json()["events_url"])
            assert ended[-1].data["status"] == "ready"
    for server in (one, two):
        assert "Traceback" not in server.log.read_text(), server.log_tail()


async def test_a_battle_slower_to_make_than_a_lease_keeps_its_place(
    tmp_path: Path, openai_server, photo_bytes: bytes
) -> None:
    base_url, _ = openai_server
    pool = slow_pool(tmp_path / "arena.toml", base_url, 1)
    lease = 1.0
    env = ONE_PLACE | {"ARENA_BATTLE_LEASE": str(lease)}
    with serve_arena(tmp_path, pool, env_extra=env) as server:
        async with httpx.AsyncClient(timeout=60, trust_env=False) as browser:
            form = browser.build_request(
                "POST",
                f"{server.url}/api/battles",
                files={"image": ("photo.jpg", photo_bytes, "image/jpeg")},
                data={"prompt": "Where was this photo taken?"},
            )
            body = form.read()
            pieces = 8

            async def slowly() -> AsyncIterator[bytes]:
                step = -(-len(body) // pieces)
                for start in range(0, len(body), step):
                    yield body[start : start + step]
                    await asyncio.sleep(4 * lease / pieces)  # the whole upload takes four leases

            slow = asyncio.create_task(
                browser.post(
                    f"{server.url}/api/battles",
                    content=slowly(),
                    headers={"Content-Type": form.headers["Content-Type"]},
                )
            )
            await asyncio.sleep(2.5 * lease)  # past the lease, the slow upload still arriving
            assert not slow.done()
            refused = await create(browser, server.url, photo_bytes)
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"] == "arena_full"
            made = await slow
            assert made.status_code == 201, made.text
            ended = await collect(browser, server.url + made.json()["events_url"])
            assert ended[-1].data["status"] == "ready"
