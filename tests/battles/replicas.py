"""Helpers for tests with several `arena serve` replicas: a clean shared
PostgreSQL, and an SSE reader that stamps each event as it arrives."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import text

from arena.db.session import make_engine
from arena.db.tables import Base


def empty_database(url: str) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        tables = ", ".join(t.name for t in Base.metadata.sorted_tables)
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    engine.dispose()


@dataclass(frozen=True)
class Received:
    name: str
    data: dict[str, Any]
    at: float  # time.monotonic() when its last line arrived


async def events(client: httpx.AsyncClient, url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Received]:
    """The SSE events of `url`, each as soon as it is complete on the wire."""
    async with client.stream("GET", url, headers={"Accept": "text/event-stream", **(headers or {})}) as response:
        assert response.status_code == 200, await response.aread()
        name, data = "message", ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data += line.removeprefix("data: ")
            elif line == "" and data:
                yield Received(name, json.loads(data), time.monotonic())
                name, data = "message", ""


async def collect(client: httpx.AsyncClient, url: str, headers: dict[str, str] | None = None) -> list[Received]:
    return [event async for event in events(client, url, headers)]


def answer_text(received: list[Received], side: str) -> str:
    return "".join(e.data["text"] for e in received if e.name == "delta" and e.data["side"] == side)
