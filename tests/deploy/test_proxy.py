"""The shipped nginx rules (deploy/nginx/) in front of a replica, on loopback: what
the replica believes about each request's address, host and scheme, and what
nginx writes in its access log. The browser connects from 127.0.0.2, so its
address differs from nginx's (127.0.0.1), as it does in production."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import write_pool
from tests.servers.nginx import Proxy, nginx_proxy
from tests.web.conftest import ArenaServer, serve_arena

BROWSER_ADDRESS = "127.0.0.2"
UPLOADS_PER_MINUTE = 2
POOL_EXTRA = '\n[integrity]\nchallenge = "off"\n'


@pytest.fixture(params=["*", "127.0.0.1"], ids=["trusting-every-address", "trusting-nginx-only"])
def proxied(request: pytest.FixtureRequest, tmp_path: Path, openai_server) -> Iterator[tuple[ArenaServer, Proxy]]:
    """One replica behind the shipped nginx rules. Whether the replica trusts every
    forwarding address or nginx's alone, the rules must leave the client no say."""
    base_url, _ = openai_server
    pool = write_pool(tmp_path / "arena.toml", base_url, {"north": "fast-north", "south": "fast-south"})
    pool.write_text(pool.read_text() + POOL_EXTRA)
    env = {"ARENA_FORWARDED_ALLOW_IPS": request.param, "ARENA_BATTLES_PER_MINUTE": str(UPLOADS_PER_MINUTE)}
    with (
        serve_arena(tmp_path, pool, env_extra=env) as replica,
        nginx_proxy(tmp_path / "nginx", {"one": replica.url}) as proxy,
    ):
        yield replica, proxy


def browser(proxy: Proxy) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(local_address=BROWSER_ADDRESS)
    return httpx.AsyncClient(base_url=proxy.url, transport=transport, timeout=30, trust_env=False)


async def upload(client: httpx.AsyncClient, photo: bytes, headers: dict[str, str]) -> httpx.Response:
    return await client.post(
        "/api/battles",
        files={"image": ("photo.jpg", photo, "image/jpeg")},
        data={"prompt": "Where was this taken?"},
        headers=headers,
    )


class TestForwardedAddress:
    async def test_a_forged_x_forwarded_for_does_not_change_the_address(
        self, proxied: tuple[ArenaServer, Proxy], photo_bytes: bytes
    ) -> None:
        replica, proxy = proxied
        statuses = []
        for i in range(UPLOADS_PER_MINUTE + 2):
            # a fresh cookie jar and a made-up address for every upload, as the attack did
            async with browser(proxy) as client:
                forged = {"X-Forwarded-For": f"203.0.113.{i + 1}, 198.51.100.{i + 7}"}
                statuses.append((await upload(client, photo_bytes, forged)).status_code)
        # one address: its upload limit holds
        assert statuses == [201] * UPLOADS_PER_MINUTE + [429, 429]
        with sqlite3.connect(replica.database) as db:
            addresses = {row[0] for row in db.execute("SELECT ip_hash FROM battles")}
        assert len(addresses) == 1 and "" not in addresses


class TestForwardedHostAndScheme:
    async def test_a_browser_post_through_nginx_passes_the_same_origin_check(
        self, proxied: tuple[ArenaServer, Proxy], photo_bytes: bytes
    ) -> None:
        _, proxy = proxied
        async with browser(proxy) as client:
            # the host keeps its port, so the replica sees the origin the browser is on
            answer = await upload(client, photo_bytes, {"Origin": proxy.url})
        assert answer.status_code == 201, answer.text

    async def test_a_tls_terminator_in_front_keeps_https(
        self, proxied: tuple[ArenaServer, Proxy], photo_bytes: bytes
    ) -> None:
        _, proxy = proxied
        public = proxy.url.replace("http://", "https://")
        async with browser(proxy) as client:
            answer = await upload(client, photo_bytes, {"Origin": public, "X-Forwarded-Proto": "https"})
            assert answer.status_code == 201, answer.text
            assert "secure" in answer.headers["set-cookie"].lower()  # the voter cookie, for https only
            # nothing but http or https is taken from the header
            odd = await upload(client, photo_bytes, {"Origin": proxy.url, "X-Forwarded-Proto": "gopher"})
        assert odd.status_code == 201, odd.text


class TestAccessLog:
    async def test_no_token_query_or_address_is_logged(self, proxied: tuple[ArenaServer, Proxy]) -> None:
        _, proxy = proxied
        token = uuid.uuid4().hex
        async with browser(proxy) as client:
            await client.get(f"/review?token={token}", headers={"Referer": f"/review?token={token}"})
        logged = proxy.shipped_log.read_text()
        assert "GET /review HTTP/1.1" in logged
        assert token not in logged and BROWSER_ADDRESS not in logged and "?" not in logged
