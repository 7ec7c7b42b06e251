"""The deployment for real, on loopback: two `arena serve` replicas on one
PostgreSQL and one S3 store (moto's server), behind Debian's nginx with the
arena's proxy rules. A battle is created through one replica, and streamed
and voted through the other."""

from __future__ import annotations

import asyncio
import statistics
import uuid
from pathlib import Path

import httpx

from tests.battles.replicas import Received, answer_text, collect, empty_database, events
from tests.battles.test_replicas import NO_READING_TIME
from tests.conftest import write_pool
from tests.servers.nginx import PIN, nginx_proxy
from tests.servers.s3 import S3Server
from tests.web.conftest import serve_arena


async def test_a_battle_made_on_one_replica_streams_and_votes_on_the_other(
    postgres_url: str, tmp_path: Path, openai_server, s3: S3Server, photo_bytes: bytes
) -> None:
    base_url, _ = openai_server
    pool = write_pool(tmp_path / "arena.toml", base_url, {"paced-one": "paced-one", "paced-two": "paced-two"})
    pool.write_text(pool.read_text() + NO_READING_TIME)
    bucket = s3.create_bucket(f"arena-{uuid.uuid4().hex[:12]}")
    shared = {"ARENA_IMAGE_STORE": f"s3://{bucket}/photos", **s3.env()}
    empty_database(postgres_url)
    try:
        with (
            serve_arena(tmp_path, pool, postgres_url, shared) as one,
            serve_arena(tmp_path, pool, postgres_url, shared) as two,
            nginx_proxy(tmp_path / "nginx", {"one": one.url, "two": two.url}) as proxy,
        ):
            async with httpx.AsyncClient(base_url=proxy.url, timeout=30, trust_env=False) as browser:
                for _ in range(4):  # unpinned requests are shared out between the replicas
                    assert (await browser.get("/healthz")).status_code == 200
                created = await browser.post(
                    "/api/battles",
                    files={"image": ("photo.jpg", photo_bytes, "image/jpeg")},
                    data={"prompt": "Where was this taken?"},
                    headers={PIN: "one"},
                )
                assert created.status_code == 201, created.text
                path = created.json()["events_url"]
                runner = events(browser, path, {PIN: "two"})  # replica two runs it: the photo comes from the bucket
                first = await anext(runner)
                on_one_task = asyncio.create_task(collect(browser, path, {PIN: "one"}))  # a watcher on one

                on_two = [first] + [e async for e in runner]
                on_one = await on_one_task
                vote = await browser.post(
                    f"/api/battles/{created.json()['battle_id']}/vote", json={"choice": "b"}, headers={PIN: "two"}
                )
                assert vote.status_code == 200, vote.text
                assert {vote.json()["model_a"], vote.json()["model_b"]} == {"paced-one", "paced-two"}

                photo = await browser.get(f"/images/{_photo_sha(s3, bucket)}.jpg", headers={PIN: "one"})
                assert photo.status_code == 200 and photo.content[:3] == b"\xff\xd8\xff"
            requests = proxy.requests()
    finally:
        empty_database(postgres_url)

    replica = {one.url.removeprefix("http://"): "one", two.url.removeprefix("http://"): "two"}

    def routed(method: str, suffix: str) -> list[str]:
        return sorted(replica[r] for r, m, uri in requests if m == method and uri.endswith(suffix))

    assert set(routed("GET", "/healthz")) == {"one", "two"}  # unpinned: round robin
    assert routed("POST", "/api/battles") == ["one"]
    assert routed("GET", "/events") == ["one", "two"]  # the running stream on two, the watcher on one
    assert routed("POST", "/vote") == ["two"]
    assert routed("GET", ".jpg") == ["one"]
    assert not (one.data_dir / "images").exists()  # nothing on the replicas' disk: all in the bucket

    # the stream came through nginx as it was made (no buffering), and the watcher on the
    # other replica saw the same events, live
    ready = next(e.at for e in on_two if e.name == "ready")
    deltas = [e for e in on_two if e.name == "delta"]
    assert ready - deltas[0].at > 1.0
    assert [e.name for e in on_one if e.name != "delta"] == [e.name for e in on_two if e.name != "delta"]
    for side in "ab":
        assert answer_text(on_one, side) == answer_text(on_two, side) != ""
    lag = _lag_ms(on_two, on_one)
    print(
        f"\nthrough nginx, the other replica's deltas lag the running one's by median {statistics.median(lag):.1f} ms"
    )
    assert statistics.median(lag) < 250


def _lag_ms(first: list[Received], second: list[Received]) -> list[float]:
    """How much later each delta reached `second` than `first` (they carry the same deltas)."""
    a = [e for e in first if e.name == "delta"]
    b = [e for e in second if e.name == "delta"]
    return [(y.at - x.at) * 1000 for x, y in zip(a, b, strict=True)]


def _photo_sha(s3: S3Server, bucket: str) -> str:
    keys = [o["Key"] for o in s3.client().list_objects_v2(Bucket=bucket)["Contents"]]
    assert len(keys) == 1, keys
    return keys[0].rsplit("/", 1)[1].removesuffix(".jpg")
