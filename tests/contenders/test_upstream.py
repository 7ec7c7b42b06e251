"""Upstream connection pools: a provider's connections in shards, as many in all as asked."""

from __future__ import annotations

import asyncio

import httpx

from arena.contenders.upstream import ShardedTransport


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
