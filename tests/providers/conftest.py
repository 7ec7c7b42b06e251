"""Fixtures of the provider tests: a scripted raw HTTP server and a client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.servers.scripted import ScriptedServer


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    loopback = ScriptedServer()
    await loopback.start()
    yield loopback
    await loopback.stop()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client
