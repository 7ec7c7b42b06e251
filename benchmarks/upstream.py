"""What reading the contenders' answers costs a replica, per chunk, by HTTP client.

    python benchmarks/upstream.py [--streams 500] [--answer-seconds 6] [--rounds 2]

`--streams` answers at once from benchmarks/lean_contenders.py (in its own process: a chunk
every 0.25 s), each read to the end through the providers' own reader (`apis.http.open_stream`
and `iter_sse`, as a battle reads them), by three clients in turn:

* **httpx's own transport** (httpcore and h11, pure Python), in pools of at most 64
  connections (httpcore's pool does work quadratic in its connections): what
  `contenders.upstream` used;
* **httpx over aiohttp** (`upstream.AiohttpTransport`): what it uses now;
* **aiohttp alone**, its body read in pieces with no SSE parsing: the floor under both.

Printed per client: CPU seconds of this process, microseconds of CPU per chunk, and the wall
time (which the contenders' pace sets). The best of `--rounds` rounds counts.
Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/http.py, beside this file, would shadow the standard library's `http` for aiohttp
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import asyncio
import json
import socket
import subprocess
import time
from collections.abc import Callable, Coroutine

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.contenders.apis.http import iter_sse, open_stream  # noqa: E402
from arena.contenders.base import GenerationLimits  # noqa: E402
from arena.contenders.upstream import AiohttpTransport  # noqa: E402
from tests.servers import free_port  # noqa: E402

LIMITS = GenerationLimits(timeout=300.0, stall_timeout=60.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=500, help="answers streaming at once")
    parser.add_argument("--answer-seconds", type=float, default=6.0, help="how long each answer streams")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per client; the best counts")
    args = parser.parse_args()
    port = free_port()
    contenders = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "lean_contenders.py"), str(port)])
    try:
        _wait_for_port(port)
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        body: dict[str, object] = {
            "model": f"steady-{args.answer_seconds:g}-x",
            "stream": True,
            "messages": [{"role": "user", "content": "Where?"}],
        }
        print(f"{args.streams} answers at once, {args.answer_seconds:g} s each, a chunk every 0.25 s")
        print(f"{'client':<24} {'chunks':>7} {'CPU s':>7} {'us/chunk':>9} {'wall s':>7}")
        clients: dict[str, Callable[[], Coroutine[None, None, int]]] = {
            "httpx's own transport": lambda: _through_httpx(_own_transports(args.streams), url, body, args.streams),
            "httpx over aiohttp": lambda: _through_httpx([AiohttpTransport(args.streams)], url, body, args.streams),
            "aiohttp alone (floor)": lambda: _aiohttp_alone(url, body, args.streams),
        }
        for name, run in clients.items():
            best: tuple[float, float, int] | None = None
            for _ in range(args.rounds):
                started, cpu = time.perf_counter(), time.process_time()
                chunks = asyncio.run(run())
                figures = (time.process_time() - cpu, time.perf_counter() - started, chunks)
                best = figures if best is None or figures[0] < best[0] else best
            assert best is not None
            cpu_s, wall, chunks = best
            print(f"{name:<24} {chunks:>7} {cpu_s:>7.2f} {cpu_s / chunks * 1e6:>9.0f} {wall:>7.1f}")
    finally:
        contenders.terminate()
        contenders.wait()


def _own_transports(size: int, shard: int = 64) -> list[httpx.AsyncBaseTransport]:
    count = -(-size // shard)
    limits = httpx.Limits(max_connections=shard, max_keepalive_connections=shard)
    return [httpx.AsyncHTTPTransport(limits=limits) for _ in range(count)]


async def _through_httpx(
    transports: list[httpx.AsyncBaseTransport], url: str, body: dict[str, object], streams: int
) -> int:
    """Chunks (SSE messages) read by `streams` answers at once, as a battle reads them, the
    streams dealt out over the transports in turn."""
    clients = [httpx.AsyncClient(transport=transport) for transport in transports]

    async def one(http: httpx.AsyncClient) -> int:
        async with open_stream(http, url, body=body, headers={}, limits=LIMITS, who="bench") as response:
            return sum([1 async for _ in iter_sse(response, LIMITS, "bench")])

    try:
        return sum(await asyncio.gather(*(one(clients[i % len(clients)]) for i in range(streams))))
    finally:
        for http in clients:
            await http.aclose()


async def _aiohttp_alone(url: str, body: dict[str, object], streams: int) -> int:
    """Pieces of body read, without parsing: what the socket and the HTTP parser cost."""
    data = json.dumps(body).encode()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=streams)) as session:

        async def one() -> int:
            async with session.post(url, data=data, headers={"content-type": "application/json"}) as response:
                return sum([1 async for _ in response.content.iter_any()])

        return sum(await asyncio.gather(*(one() for _ in range(streams))))


def _wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the contenders did not listen on {port} within {timeout:.0f} s")


if __name__ == "__main__":
    main()
