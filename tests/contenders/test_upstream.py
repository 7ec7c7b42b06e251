"""Upstream connection pools: a provider's connections in shards, as many in all as asked,
through the environment's proxies."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from arena.contenders.upstream import ShardedTransport, UpstreamClients
from tests.servers.forward_proxy import forward_proxy


class TestShardedTransport:
    def test_shards_hold_the_size_asked(self) -> None:
        transport = ShardedTransport(1000, shard=64)
        assert len(transport.shards) == 16
        limits = [shard._pool._max_connections for shard in transport.shards]
        assert sum(limits) >= 1000 and max(limits) <= 64
        assert len(ShardedTransport(30, shard=64).shards) == 1

    def test_requests_go_to_the_least_busy_shard_and_leave_it_when_closed(self, openai_server: tuple) -> None:
        async def scenario() -> None:
            transport = ShardedTransport(6, shard=2)
            async with httpx.AsyncClient(transport=transport) as http:
                url = openai_server[0] + "/chat/completions"
                body = {"model": "echo", "stream": True, "messages": [{"role": "user", "content": "Where?"}]}
                request = http.build_request("POST", url, json=body)
                responses = [await http.send(request, stream=True) for _ in range(5)]
                assert transport.in_flight == [2, 2, 1]
                await responses[0].aclose()
                await responses[0].aclose()  # a second close counts once
                assert transport.in_flight == [1, 2, 1]
                for response in responses[1:]:
                    await response.aread()
                    await response.aclose()
                assert transport.in_flight == [0, 0, 0]

        asyncio.run(scenario())


BODY = {"model": "echo", "stream": True, "messages": [{"role": "user", "content": "Where?"}]}


def _without_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def _post_through_pools(urls: list[str]) -> list[int]:
    """Each URL's status, posted in turn through one set of provider clients."""

    async def scenario() -> list[int]:
        clients = UpstreamClients(lambda origin: 8, other=httpx.AsyncClient())
        try:
            statuses = []
            for url in urls:
                response = await clients.for_url(url).post(url + "/chat/completions", json=BODY)
                assert "data: [DONE]" in response.text
                statuses.append(response.status_code)
            return statuses
        finally:
            await clients.aclose()
            await clients.other.aclose()

    return asyncio.run(scenario())


class TestEnvironmentProxies:
    """A provider's client goes through HTTP_PROXY as httpx's own client would, and around it
    for the hosts NO_PROXY names, through a real forward proxy on loopback."""

    def test_requests_go_through_the_proxy_except_to_no_proxy_hosts(
        self, openai_server: tuple, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        base, upstream = openai_server
        direct = base.replace("127.0.0.1", "localhost")
        before = len(upstream.requests)  # the server serves the whole session
        with forward_proxy() as proxy:
            _without_proxy_variables(monkeypatch)
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            monkeypatch.setenv("NO_PROXY", "localhost")
            assert _post_through_pools([base, direct, base]) == [200, 200, 200]
            assert proxy.forwarded == [base + "/chat/completions"] * 2
            assert len(upstream.requests) - before == 3  # the localhost one went straight to the server

    def test_without_proxy_variables_requests_go_direct(
        self, openai_server: tuple, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        base, upstream = openai_server
        before = len(upstream.requests)  # the server serves the whole session
        with forward_proxy() as proxy:
            _without_proxy_variables(monkeypatch)
            assert _post_through_pools([base]) == [200]
            assert proxy.forwarded == [] and len(upstream.requests) - before == 1
