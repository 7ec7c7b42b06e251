"""One loopback server for the three API kinds, each in its real SSE format:
OpenAI's chat completions, Anthropic's Messages API and Gemini's
streamGenerateContent. The model name picks the behaviour: `*-ok` answers,
`*-leaky` names its maker, `*-down` answers with the API's error (500 for
OpenAI, 529 overloaded for Anthropic, 503 for Gemini)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ANSWER = ["## Where this was taken\n\n", "Cyrillic shop signs and a tram: ", "**Saint Petersburg, Russia**."]


class ModelAPIs:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self.openai, methods=["POST"]),
            Route("/v1/messages", self.anthropic, methods=["POST"]),
            Route("/v1beta/models/{model}:streamGenerateContent", self.gemini, methods=["POST"]),
        ])  # fmt: skip

    async def openai(self, request: Request) -> Response:
        body = await request.json()
        model = str(body["model"])
        self.calls.append(model)
        if model.endswith("-down"):
            return JSONResponse({"error": {"message": "internal error", "type": "server_error"}}, status_code=500)
        pieces = ["As a model trained by OpenAI, "] + ANSWER if model.endswith("-leaky") else ANSWER
        return StreamingResponse(_openai_chunks(model, pieces), media_type="text/event-stream")

    async def anthropic(self, request: Request) -> Response:
        body = await request.json()
        model = str(body["model"])
        self.calls.append(model)
        if model.endswith("-down"):
            return JSONResponse(
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, status_code=529
            )
        pieces = ["I am Claude, made by Anthropic. "] + ANSWER if model.endswith("-leaky") else ANSWER
        return StreamingResponse(_anthropic_events(model, pieces), media_type="text/event-stream")

    async def gemini(self, request: Request) -> Response:
        model = request.path_params["model"]
        self.calls.append(model)
        if model.endswith("-down"):
            error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
            return JSONResponse(error, status_code=503)
        pieces = ["As Gemini, a Google model: "] + ANSWER if model.endswith("-leaky") else ANSWER
        return StreamingResponse(_gemini_chunks(pieces), media_type="text/event-stream")


async def _openai_chunks(model: str, pieces: list[str]) -> AsyncIterator[str]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        payload = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(payload)}\n\n"

    for piece in pieces:
        yield chunk({"content": piece})
    yield chunk({}, "stop")
    usage = {"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930}
    yield f"data: {json.dumps({'id': 'c1', 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


async def _anthropic_events(model: str, pieces: list[str]) -> AsyncIterator[str]:
    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    yield event("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [],
        "usage": {"input_tokens": 1500, "output_tokens": 1}}})  # fmt: skip
    yield event(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    for piece in pieces:
        yield event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
        )
    yield event("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield event(
        "message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 40}}
    )
    yield event("message_stop", {"type": "message_stop"})


async def _gemini_chunks(pieces: list[str]) -> AsyncIterator[str]:
    for i, piece in enumerate(pieces):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}
        chunk: dict[str, Any] = {"candidates": [candidate]}
        if i == len(pieces) - 1:
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = {"promptTokenCount": 1300, "candidatesTokenCount": 35, "totalTokenCount": 1335}
        yield f"data: {json.dumps(chunk)}\r\n\r\n"
