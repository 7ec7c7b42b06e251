"""Every provider test runs through both HTTP clients a contender may be given: httpx's own
(`ProviderDeps.http`, the tools' and the command line's) and the served arena's per-provider
client, httpx over aiohttp (`contenders.upstream`), whose errors must read the same."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from arena.contenders.upstream import AiohttpTransport

CLIENTS: dict[str, Callable[[], httpx.AsyncClient]] = {
    "httpx": httpx.AsyncClient,
    "aiohttp": lambda: httpx.AsyncClient(transport=AiohttpTransport(8)),
}


@pytest.fixture(params=list(CLIENTS))
def make_client(request: pytest.FixtureRequest) -> Callable[[], httpx.AsyncClient]:
    return CLIENTS[request.param]


@pytest.fixture
async def http(make_client: Callable[[], httpx.AsyncClient]) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client() as client:
        yield client
