"""One HTTP connection pool per provider.

A single shared client would put every contender behind one pool of 100
connections: 200 battles (400 streams) made streams wait for a connection
and fail with `PoolTimeout` midway. Each provider origin gets its own client
instead, sized for the battles a replica accepts (`Settings.connections_for`),
so a battle the replica admitted never waits for a connection.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from arena.config import origin_of

KEEPALIVE_EXPIRY = 30.0  # seconds an idle connection stays open for the next battle


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
            limits = httpx.Limits(
                max_connections=size, max_keepalive_connections=size, keepalive_expiry=KEEPALIVE_EXPIRY
            )
            client = self._clients[origin] = httpx.AsyncClient(follow_redirects=False, limits=limits)
        return client

    def sizes(self) -> dict[str, int]:
        """Each provider origin's pool size (for the start-up log and tests)."""
        return {origin: self._size_of(origin) for origin in self._clients}

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
