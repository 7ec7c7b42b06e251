"""Issue 16 figures: does a second replica (and nginx) slow a battle's stream down?

    python benchmarks/replicas.py [--battles 10]

Starts, all on 127.0.0.1: a loopback OpenAI-compatible server (`paced-*` contenders,
five chunks 0.4 s apart per side), moto's S3 server, a fresh PostgreSQL database,
two `arena serve` replicas on it with the S3 image store, and Debian's nginx with the
arena's proxy rules (deploy/nginx/locations.conf). For each set-up it runs `--battles`
battles one after the other, each watched by two streams: the one that runs the battle
and a second watcher. Printed per set-up:

* first delta: from opening the running stream to its first delta (p50, p95);
* watcher lag: how much later each delta reached the second watcher than the running
  stream (p50, p95, max): on the same replica it is the in-process fan-out, on the other
  replica it is PostgreSQL (batch write, NOTIFY, read).

Set-ups: one replica direct; one replica through nginx; two replicas direct; two replicas
through nginx (created on one, run and streamed through the other, watched on the first).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the checkout instead of this directory, whose benchmarks/http.py would shadow the standard library's http
sys.path[0] = str(ROOT)

import httpx  # noqa: E402
import psycopg  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from arena.db.migrate import upgrade  # noqa: E402
from tests.battles.replicas import Received, collect, events  # noqa: E402
from tests.conftest import POSTGRES_ADMIN_URL, write_pool  # noqa: E402
from tests.servers import serve_in_thread  # noqa: E402
from tests.servers.nginx import PIN, nginx_proxy  # noqa: E402
from tests.servers.openai_compatible import OpenAICompatibleServer  # noqa: E402
from tests.servers.s3 import s3_server  # noqa: E402
from tests.web.conftest import serve_arena  # noqa: E402

SHARED = Path(os.environ.get("GEOARENA_SHARED", ROOT.parent / "shared"))
PHOTO = SHARED / "data" / "geobrowse-sample" / "images" / "level1-1.jpg"


@contextmanager
def fresh_database() -> Iterator[str]:
    admin = make_url(POSTGRES_ADMIN_URL)
    dsn = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    name = f"geoarena_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin.set(database=name).render_as_string(hide_password=False)
    upgrade(url)
    try:
        yield url
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


Role = tuple[str, dict[str, str]]  # a base URL and the headers that pin a replica behind nginx


async def one_battle(
    client: httpx.AsyncClient, create: Role, run: Role, watch: Role, photo: bytes
) -> tuple[float, list[float]]:
    created = await client.post(
        f"{create[0]}/api/battles",
        files={"image": ("photo.jpg", photo, "image/jpeg")},
        data={"prompt": "Where was this taken?"},
        headers=create[1],
    )
    created.raise_for_status()
    path = created.json()["events_url"]
    opened = time.monotonic()
    runner = events(client, run[0] + path, run[1])
    first = await anext(runner)
    watcher = asyncio.create_task(collect(client, watch[0] + path, watch[1]))
    ran = [first] + [e async for e in runner]
    watched = await watcher
    first_delta = next(e.at for e in ran if e.name == "delta") - opened
    return first_delta, lags_ms(ran, watched)


def lags_ms(ran: list[Received], watched: list[Received]) -> list[float]:
    a = [e for e in ran if e.name == "delta"]
    b = [e for e in watched if e.name == "delta"]
    # the watcher joined a moment after the first event: compare the deltas both saw live
    return [(y.at - x.at) * 1000 for x, y in zip(a[1:], b[1:], strict=True)]


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


async def measure(name: str, roles: tuple[Role, Role, Role], battles: int, photo: bytes) -> None:
    firsts: list[float] = []
    lags: list[float] = []
    async with httpx.AsyncClient(timeout=60, trust_env=False) as client:
        for _ in range(battles):
            first, lag = await one_battle(client, *roles, photo)
            firsts.append(first * 1000)
            lags += lag
    print(
        f"{name:<30} first delta p50 {pct(firsts, 50):6.1f} ms  p95 {pct(firsts, 95):6.1f} ms   "
        f"watcher lag p50 {pct(lags, 50):6.1f} ms  p95 {pct(lags, 95):6.1f} ms  max {max(lags):6.1f} ms"
        f"  ({len(lags)} deltas)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=10)
    args = parser.parse_args()
    photo = PHOTO.read_bytes()
    model = OpenAICompatibleServer()
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        base = Path(tmp)
        model_url = stack.enter_context(serve_in_thread(model.app))
        s3 = stack.enter_context(s3_server(base / "moto.log"))
        bucket = s3.create_bucket(f"bench-{uuid.uuid4().hex[:8]}")
        database = stack.enter_context(fresh_database())
        pool = write_pool(base / "arena.toml", f"{model_url}/v1", {"paced-one": "paced-one", "paced-two": "paced-two"})
        pool.write_text(pool.read_text() + '\n[integrity]\nmin_read_seconds = 0\nchallenge = "off"\n')
        env = {"ARENA_IMAGE_STORE": f"s3://{bucket}/photos", "ARENA_BATTLES_PER_MINUTE": "0", **s3.env()}
        one = stack.enter_context(serve_arena(base, pool, database, env))
        two = stack.enter_context(serve_arena(base, pool, database, env))
        proxy = stack.enter_context(nginx_proxy(base / "nginx", {"one": one.url, "two": two.url}))
        print(f"{args.battles} battles per set-up, 2 sides x 5 deltas 0.4 s apart, PostgreSQL + S3 (moto)")
        direct_one: Role = (one.url, {})
        direct_two: Role = (two.url, {})
        via_one: Role = (proxy.url, {PIN: "one"})
        via_two: Role = (proxy.url, {PIN: "two"})
        await measure("one replica, direct", (direct_one, direct_one, direct_one), args.battles, photo)
        await measure("one replica, through nginx", (via_one, via_one, via_one), args.battles, photo)
        await measure("two replicas, direct", (direct_one, direct_one, direct_two), args.battles, photo)
        await measure("two replicas, through nginx", (via_one, via_two, via_one), args.battles, photo)


if __name__ == "__main__":
    asyncio.run(main())
