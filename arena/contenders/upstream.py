"""One HTTP connection pool per provider.

A single shared client would put every contender behind one pool of 100
connections: 200 battles (400 streams) made streams wait for a connection
and fail with `PoolTimeout` midway. Each provider origin gets its own client
instead, sized for the battles a replica accepts (`Settings.connections_for`),
so a battle the replica admitted never waits for a connection.

A provider's connections are held in shards of at most `SHARD_CONNECTIONS`, each
request going to the shard with the fewest in flight: httpcore's pool does work
quadratic in its connections on every request and every answer's end (it counts
the idle ones once for each idle one), which at 1,000 connections in one pool
cost more than the streams themselves.

httpx reads HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY only for a client whose
transport it makes itself, so each provider's client mounts the environment's
proxies the way httpx mounts them for its own: a sharded transport through the
proxy for each proxy pattern, the direct one for NO_PROXY's hosts and the rest.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import partial

import httpx
from httpx._utils import get_environment_proxies

from arena.config import origin_of

KEEPALIVE_EXPIRY = 30.0  # seconds an idle connection stays open for the next battle
SHARD_CONNECTIONS = 64  # connections of one httpcore pool at most


class UpstreamClients:
    """The clients by provider origin, made on first use; `other` serves everything else."""

    def __init__(self, size_of: Callable[[str], int], other: httpx.AsyncClient) -> None:
        self._size_of = size_of
        self.other = other
        self._clients: dict[str, httpx.AsyncClient] = {}

    def for_url(self, url: str) -> httpx.AsyncClient:
        origin = origin_of(url)
        if not origin:
            return self.other
        client = self._clients.get(origin)
        if client is None:
            size = self._size_of(origin)
            client = self._clients[origin] = httpx.AsyncClient(
                follow_redirects=False, transport=ShardedTransport(size), mounts=_proxy_mounts(size)
            )
        return client

    def sizes(self) -> dict[str, int]:
        """Each provider origin's pool size (for the start-up log and tests)."""
        return {origin: self._size_of(origin) for origin in self._clients}

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


class ShardedTransport(httpx.AsyncBaseTransport):
    """`size` connections to one provider, in pools of at most `shard` connections; a request
    goes to the pool with the fewest requests in flight, so it waits for a connection only when
    all `size` are busy, as in one pool of that size."""

    def __init__(self, size: int, shard: int = SHARD_CONNECTIONS, proxy: str | None = None) -> None:
        count = -(-max(size, 1) // shard)
        each = -(-max(size, 1) // count)
        limits = httpx.Limits(max_connections=each, max_keepalive_connections=each, keepalive_expiry=KEEPALIVE_EXPIRY)
        self.shards = [httpx.AsyncHTTPTransport(limits=limits, proxy=proxy) for _ in range(count)]
        self.in_flight = [0] * count

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = min(range(len(self.shards)), key=self.in_flight.__getitem__)
        self.in_flight[index] += 1
        try:
            response = await self.shards[index].handle_async_request(request)
        except BaseException:
            self.in_flight[index] -= 1
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Counted(response.stream, self.in_flight, index)
        return response

    async def aclose(self) -> None:
        for shard in self.shards:
            await shard.aclose()


def _proxy_mounts(size: int) -> dict[str, httpx.AsyncBaseTransport | None]:
    """The environment's proxies as httpx mounts them (None: the client's direct transport);
    a proxied transport is made on its first request, as most patterns never match the origin."""
    return {
        pattern: None if proxy is None else _OnFirstUse(partial(ShardedTransport, size, proxy=proxy))
        for pattern, proxy in get_environment_proxies().items()
    }


class _OnFirstUse(httpx.AsyncBaseTransport):
    def __init__(self, make: Callable[[], httpx.AsyncBaseTransport]) -> None:
        self._make = make
        self._made: httpx.AsyncBaseTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._made is None:
            self._made = self._make()
        return await self._made.handle_async_request(request)

    async def aclose(self) -> None:
        if self._made is not None:
            await self._made.aclose()


class _Counted(httpx.AsyncByteStream):
    """An answer's body that leaves its shard's count when it is closed (once)."""

    def __init__(self, stream: httpx.AsyncByteStream, in_flight: list[int], index: int) -> None:
        self._stream, self._in_flight, self._index = stream, in_flight, index
        self._open = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in self._stream:
            yield piece

    async def aclose(self) -> None:
        if self._open:
            self._open = False
            self._in_flight[self._index] -= 1
        await self._stream.aclose()
