"""A loopback OpenAI-compatible chat-completions server for tests.

It speaks the real streaming protocol (SSE `data:` chunks, `[DONE]`, usage
chunk, error bodies) and behaves according to the requested model name:

* `echo-*`    a markdown answer in several chunks that quotes the prompt
* `slow-*`    the same, one chunk every 0.1 s for ~100 s
* `paced-*`   the same answer once, one chunk every 0.4 s (2 s in all)
* `steady-S-*` the first chunk at once, then one every 0.25 s for S seconds
* `error-500`, `error-429`, `error-401`  the API's JSON error body
* `broken`    two chunks, then the connection is cut mid-stream
* `stall`     one chunk, then silence
* `malformed` a chunk that is not JSON
* `in-stream-error`  an `{"error": ...}` chunk
* `leaky`     an answer that names its maker
* `bad-key`   HTTP 401 whose message quotes the API key it was sent (as some
              proxies and self-hosted servers do); `bad-key-in-stream` the same
              inside the stream

Every request body is recorded in `requests` for assertions.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


class OpenAICompatibleServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.cut_off = 0  # streams whose client went away before the end
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        model = str(body.get("model", ""))
        if model.startswith("error-"):
            status = int(model.removeprefix("error-"))
            return JSONResponse(
                {"error": {"message": f"simulated failure {status}", "type": "server_error", "code": None}},
                status_code=status,
            )
        if model == "bad-key":
            key = request.headers.get("authorization", "").removeprefix("Bearer ")
            return JSONResponse(
                {"error": {"message": f"Incorrect API key provided: {key}.", "type": "auth"}}, status_code=401
            )
        if model == "bad-key-in-stream":
            key = request.headers.get("authorization", "").removeprefix("Bearer ")
            chunk = "data: " + json.dumps({"error": {"message": f"key {key} has no quota left"}}) + "\n\n"
            return StreamingResponse(iter([chunk]), media_type="text/event-stream")
        return StreamingResponse(self._watched(self._stream(model, body)), media_type="text/event-stream")

    async def _watched(self, stream: AsyncIterator[str]) -> AsyncIterator[str]:
        finished = False
        try:
            async for chunk in stream:
                yield chunk
            finished = True
        finally:
            if not finished:
                self.cut_off += 1

    async def _stream(self, model: str, body: dict[str, Any]) -> AsyncIterator[str]:
        prompt = _user_text(body)
        if model == "malformed":
            yield "data: {this is not json\n\n"
            return
        if model == "in-stream-error":
            yield _chunk(model, {"role": "assistant", "content": "Hm"})
            yield "data: " + json.dumps({"error": {"message": "upstream overloaded"}}) + "\n\n"
            return
        if model == "leaky":
            pieces = ["As a model trained by ", "OpenAI", ", I think this is **Paris**."]
        elif model.startswith("long-"):  # long-N: N characters of markdown, in 1000-character pieces
            line = "- **Evidence** item, with `code` and *emphasis* in it: the street signs here\n"
            text = (line * (int(model.removeprefix("long-")) // len(line) + 1))[: int(model.removeprefix("long-"))]
            pieces = [text[i : i + 1000] for i in range(0, len(text), 1000)]
        elif model == "surrogate":  # a lone surrogate and a NUL, as JSON escapes can carry them
            pieces = ["Best guess: **Paris** \ud83d", " (48.8566\u0000N)."]
        else:
            pieces = [
                "## Where this was taken\n\n",
                f"You asked: *{prompt[:80]}*\n\n",
                "- Evidence: the architecture\n",
                "- Evidence: street signs in the photo\n\n",
                "Best guess: **Paris, France** (48.8566° N, 2.3522° E).",
            ]
        delay = 0.1 if model.startswith("slow-") else 0.4 if model.startswith("paced-") else 0.0
        repeat = 200 if model.startswith("slow-") else 1
        if model.startswith("steady-"):
            delay = 0.25
            seconds = float(model.split("-")[1])
            pieces = (pieces * int(seconds / delay / len(pieces) + 1))[: max(1, int(seconds / delay))]
        for n in range(repeat):
            for i, piece in enumerate(pieces):
                delta = {"role": "assistant", "content": piece} if i == 0 and n == 0 else {"content": piece}
                yield _chunk(model, delta)
                if model == "broken" and i == 1:
                    raise ConnectionResetError("simulated: connection cut mid-stream")
                if model == "stall" and i == 0:
                    await asyncio.sleep(3600)
                if delay:
                    await asyncio.sleep(delay)
        yield _chunk(model, {}, finish_reason="stop")
        yield (
            "data: "
            + json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion.chunk",
                    "model": model,
                    "choices": [],
                    "usage": {"prompt_tokens": 812, "completion_tokens": 57, "total_tokens": 869},
                }
            )
            + "\n\n"
        )
        yield "data: [DONE]\n\n"


def _chunk(model: str, delta: dict[str, Any], finish_reason: str | None = None) -> str:
    payload = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return "data: " + json.dumps(payload) + "\n\n"


def _user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return " ".join(p.get("text", "") for p in content if p.get("type") == "text")
    return ""
