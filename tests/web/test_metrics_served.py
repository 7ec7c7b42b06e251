"""`/metrics` of a real `arena serve` process, scraped while battles run and
after they end: finished / failed / abandoned per contender, open event
streams, contender latency and first-token histograms, rate-limit and
integrity refusals, and the snapshot's age (issue 16, item 2)."""

from __future__ import annotations

import asyncio
import math
import time

import httpx

from tests.conftest import SAMPLE_DIR, write_pool
from tests.web.conftest import serve_arena
from tests.web.test_metrics import samples

TOKEN = "metrics-admin-token-0123456789"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}


async def scrape(client: httpx.AsyncClient, url: str) -> dict:
    response = await client.get(f"{url}/metrics", headers=ADMIN)
    assert response.status_code == 200, response.text
    return samples(response.text)


def value(scraped: dict, name: str, **labels: str) -> float:
    return float(scraped.get((name, tuple(sorted(labels.items()))), 0.0))


async def create(client: httpx.AsyncClient, url: str, photo: bytes) -> httpx.Response:
    return await client.post(
        f"{url}/api/battles", files={"image": ("p.jpg", photo, "image/jpeg")}, data={"prompt": "Where is this?"}
    )


async def test_a_served_replica_reports_its_battles_streams_and_refusals(tmp_path, openai_server):
    base_url, _ = openai_server
    # eight-second answers: a stream stays open to be seen, and outlasts the 5 s reconnect grace
    pool = write_pool(tmp_path / "arena.toml", base_url, {"model-one": "steady-8-one", "model-two": "steady-8-two"})
    pool.write_text(
        pool.read_text().replace("stall_timeout = 2", "stall_timeout = 5")
        + '\n[integrity]\nmin_read_seconds = 0\nchallenge = "off"\n[ratings]\nevery = "1s"\nrounds = 10\n'
    )
    photo = (SAMPLE_DIR / "images" / "level1-1.jpg").read_bytes()
    env = {"ARENA_ADMIN_TOKEN": TOKEN, "ARENA_BATTLES_PER_MINUTE": "2"}
    with serve_arena(tmp_path, pool, env_extra=env) as server:
        url = server.url
        async with httpx.AsyncClient(trust_env=False, timeout=60) as client:
            empty = await scrape(client, url)
            assert math.isnan(value(empty, "arena_snapshot_age_seconds"))

            # The limit counts a sliding minute from two calendar minutes, the one before weighted by
            # how much of it is left: three uploads that straddle a minute's end may count as two.
            # The three below take some 20 s, so they start where a minute has enough of it left.
            if time.time() % 60 > 30:
                await asyncio.sleep(60 - time.time() % 60)

            # a battle watched to its end, with a scrape while its stream is open
            ready = (await create(client, url, photo)).json()
            async with client.stream("GET", url + ready["events_url"]) as events:
                lines = events.aiter_lines()
                async for line in lines:
                    if line.startswith("event: delta"):
                        break
                during = await scrape(client, url)
                assert value(during, "arena_event_streams_open") == 1
                assert value(during, "arena_battles_running") == 1
                async for _line in lines:
                    pass

            # a battle whose watcher leaves: abandoned after the reconnect grace
            left = (await create(client, url, photo)).json()
            async with client.stream("GET", url + left["events_url"]) as events:
                async for line in events.aiter_lines():
                    if line.startswith("event: delta"):
                        break

            # refusals: a vote from another browser, then an address past its 2 photos a minute
            async with httpx.AsyncClient(trust_env=False, timeout=60) as stranger:
                other = await stranger.post(f"{url}/api/battles/{ready['battle_id']}/vote", json={"choice": "a"})
            assert other.status_code == 403
            voted = await client.post(f"{url}/api/battles/{ready['battle_id']}/vote", json={"choice": "a"})
            assert voted.status_code == 200, voted.text
            limited = await create(client, url, photo)
            assert limited.status_code == 429

            deadline = time.monotonic() + 60
            while True:
                after = await scrape(client, url)
                done = value(after, "arena_battles_finished_total", contender="model-one", outcome="abandoned") == 1
                ranked = not math.isnan(value(after, "arena_snapshot_age_seconds"))
                if (done and ranked) or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.5)

        for contender in ("model-one", "model-two"):
            assert value(after, "arena_battles_finished_total", contender=contender, outcome="ready") == 1
            assert value(after, "arena_battles_finished_total", contender=contender, outcome="abandoned") == 1
            assert value(after, "arena_battles_finished_total", contender=contender, outcome="failed") == 0
            count = value(after, "arena_contender_latency_seconds_count", contender=contender)
            total = value(after, "arena_contender_latency_seconds_sum", contender=contender)
            assert count == 1 and 7 < total < 40  # an eight-second answer
            first = value(after, "arena_contender_first_token_seconds_count", contender=contender)
            assert first == 1 and value(after, "arena_contender_first_token_seconds_sum", contender=contender) < total
        assert value(after, "arena_event_streams_open") == 0
        assert value(after, "arena_battles_running") == 0
        assert value(after, "arena_refusals_total", code="not_your_battle") == 1
        assert value(after, "arena_refusals_total", code="rate_limited") == 1
        assert 0 <= value(after, "arena_snapshot_age_seconds") < 30
