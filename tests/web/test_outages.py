"""Outages answered as outages: a 503 with Retry-After and the security headers of any
page, whether the database or the image store is what went away."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from arena.config import Settings
from tests.conftest import truncate_all
from tests.servers import free_port
from tests.servers.s3 import CREDENTIALS
from tests.servers.tcp_relay import tcp_relay
from tests.web.conftest import ArenaServer, serve_arena
from tests.web.test_health import served

SECURITY = ("content-security-policy", "x-content-type-options", "x-frame-options", "referrer-policy")


def assert_outage(response: httpx.Response, error: str) -> None:
    assert response.status_code == 503, (response.request.url, response.status_code, response.text[:300])
    assert int(response.headers["retry-after"]) > 0
    assert all(name in response.headers for name in SECURITY), response.headers
    assert response.headers["x-request-id"]
    body = response.json()
    assert body["error"] == error and "try again" in body["message"]


@pytest.fixture
def arena_on_a_cuttable_database(tmp_path: Path, postgres_url: str) -> Iterator[tuple[ArenaServer, object]]:
    """`arena serve` on PostgreSQL reached through a relay the test can cut."""
    truncate_all(postgres_url)
    url = make_url(postgres_url)
    with tcp_relay(url.host or "127.0.0.1", url.port or 5432) as relay:
        through = url.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
        with serve_arena(tmp_path, tmp_path / "no-pool.toml", through) as server:
            yield server, relay


class TestDatabaseDown:
    def test_pages_and_api_answer_503_with_retry_after_and_the_security_headers(
        self, arena_on_a_cuttable_database: tuple[ArenaServer, object]
    ) -> None:
        server, relay = arena_on_a_cuttable_database
        assert httpx.get(server.url + "/api/leaderboard", trust_env=False).status_code == 200
        relay.cut()  # type: ignore[attr-defined]
        for path in ("/api/leaderboard", "/leaderboard", "/leaderboard.csv", "/api/battles/" + "0" * 32):
            assert_outage(httpx.get(server.url + path, trust_env=False, timeout=30), "database_unavailable")


class TestImageStoreDown:
    async def test_an_unreachable_bucket_is_a_503_and_readyz_names_it(
        self, settings: Settings, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for name, value in CREDENTIALS.items():
            monkeypatch.setenv(name, value)
        dead = settings.model_copy(
            update={"image_store": "s3://arena-photos", "s3_endpoint_url": f"http://127.0.0.1:{free_port()}"}
        )
        async for client, _app in served(dead):
            assert_outage(await client.get("/images/" + "ab" * 32), "image_store_unavailable")
            ready = await client.get("/readyz")
            assert ready.status_code == 503 and ready.json()["checks"]["images"] == "failing"
            # refused at once, or (on a loaded machine, the probe's client still being built) past the probe's time
            message = ready.json()["message"]
            assert "images: the S3 bucket arena-photos did not answer" in message or (
                "images: the image store did not answer within" in message
            )
            assert "127.0.0.1" not in ready.json()["message"]
