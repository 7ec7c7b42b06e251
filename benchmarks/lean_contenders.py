"""A lean OpenAI-compatible streaming server for benchmarks/http.py: `python lean_contenders.py PORT`.

The loopback server of the tests (tests/servers/openai_compatible.py, Starlette) parses every
request's JSON, photo and all, and builds each chunk as it goes: at 1,000 streams at once it
needed 33.5 s to send first chunks, so it measured itself, not the arena. This one is plain
asyncio streams: it reads a request's body without parsing it (the model name is found by a
byte search), sends chunks encoded once per model, and keeps connections alive, as a real
provider does. Models, as in the tests' server:

* `echo-*`     a five-piece markdown answer at once;
* `steady-S-*` the first chunk at once, then one every 0.25 s for S seconds.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from functools import cache

MODEL = re.compile(rb'"model"\s*:\s*"([^"]{0,200})"')
PIECES = [
    "## Where this was taken\n\n",
    "The photo shows a street with signs and shop fronts.\n\n",
    "- Evidence: the architecture\n",
    "- Evidence: street signs in the photo\n\n",
    "Best guess: **Paris, France** (48.8566° N, 2.3522° E).",
]
STEADY_DELAY = 0.25
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def _framed(data: str) -> bytes:
    """One SSE event as one HTTP chunk."""
    raw = data.encode()
    return b"%x\r\n%s\r\n" % (len(raw), raw)


def _event(model: str, delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    payload = {"id": "chatcmpl-lean", "object": "chat.completion.chunk", "created": 0, "model": model}
    return _framed("data: " + json.dumps({**payload, "choices": [choice]}) + "\n\n")


@cache
def chunks(model: str) -> tuple[tuple[bytes, ...], float]:
    """The whole answer of `model`, encoded once, and the pause between its chunks."""
    pieces, delay = PIECES, 0.0
    if model.startswith("steady-"):
        delay = STEADY_DELAY
        count = max(1, int(float(model.split("-")[1]) / delay))
        pieces = (PIECES * (count // len(PIECES) + 1))[:count]
    events = [_event(model, {"role": "assistant", "content": pieces[0]})]
    events += [_event(model, {"content": piece}) for piece in pieces[1:]]
    events.append(_event(model, {}, "stop"))
    usage = {"prompt_tokens": 812, "completion_tokens": 57, "total_tokens": 869}
    body = {"id": "x", "object": "chat.completion.chunk", "model": model, "choices": [], "usage": usage}
    events.append(_framed("data: " + json.dumps(body) + "\n\n"))
    events.append(_framed("data: [DONE]\n\n") + b"0\r\n\r\n")
    return tuple(events), delay


async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                return
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length) if length else b""
            found = MODEL.search(body)
            events, delay = chunks(found.group(1).decode() if found else "echo")
            writer.write(HEAD + events[0])
            await writer.drain()
            for event in events[1:]:
                if delay:
                    await asyncio.sleep(delay)
                writer.write(event)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(serve_connection, "127.0.0.1", port, backlog=4096, limit=2**16)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
