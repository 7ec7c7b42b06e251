"""A raw HTTP/1.1 server on 127.0.0.1 whose every answer is a script: for
wire formats where the test must control each byte (chunk boundaries, a
stall, a connection cut mid-chunk)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Script = Callable[[asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Received:
    target: str  # the request target: path and query
    headers: dict[str, str]
    body: dict[str, Any]
    header_names: list[str] = field(default_factory=list)  # lower-cased, in order, repeats kept
    raw: bytes = b""  # the body as it came


@dataclass
class ScriptedServer:
    """Answers the n-th request with `scripts[n]` and records what it got."""

    scripts: list[Script] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    port: int = 0

    async def start(self, port: int = 0) -> None:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", port)
        self.port = self.server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        self.server.close()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            lines = [(k.strip().lower(), v.strip()) for k, v in (h.split(":", 1) for h in head[1:] if h)]
            headers = dict(lines)
            raw = await reader.readexactly(int(headers.get("content-length", "0")))
            target = head[0].split(" ")[1]
            names = [name for name, _ in lines]
            self.received.append(Received(target, headers, json.loads(raw or b"{}"), names, raw))
            await self.scripts.pop(0)(writer)
        finally:
            writer.close()
            self.tasks.discard(task)


def http_head(status: int, content_type: str) -> bytes:
    return (
        f"HTTP/1.1 {status} Status\r\nContent-Type: {content_type}\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    ).encode()


def http_chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def json_error(status: int, payload: Any) -> Script:
    """The API's JSON error body with `status`."""

    async def run(writer: asyncio.StreamWriter) -> None:
        writer.write(http_head(status, "application/json") + http_chunk(json.dumps(payload).encode()) + b"0\r\n\r\n")
        await writer.drain()

    return run
