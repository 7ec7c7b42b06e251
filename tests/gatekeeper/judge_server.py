"""A loopback OpenAI-compatible server whose model answers gatekeeper
verdicts. The requested model name picks the behaviour:

* `verdict-yes` / `verdict-no`  a strict JSON verdict, streamed in pieces
* `fenced`      the verdict wrapped in a ```json fence
* `prose`       a friendly sentence instead of JSON
* `wrong-type`  `{"geographic": "yes", ...}`
* `stall`       one chunk, then silence
* `error-500`   the API's JSON error body
* `where-judge` a judge with a crude rule of its own: geographic when the question
                contains "where", so an evaluation of it has known right and wrong answers
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

ANSWERS = {
    "verdict-yes": '{"geographic": true, "reason": "It asks where the photo was taken."}',
    "verdict-no": '{"geographic": false, "reason": "It asks about a dog breed."}',
    "fenced": '```json\n{"geographic": true, "reason": "Asks for the country."}\n```',
    "prose": "Sure! This looks like a geographic question to me.",
    "wrong-type": '{"geographic": "yes", "reason": "maybe"}',
}


class JudgeServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        model = str(body.get("model"))
        if model == "error-500":
            return JSONResponse({"error": {"message": "judge is down", "type": "server_error"}}, status_code=500)
        question = str(body["messages"][-1]["content"])
        return StreamingResponse(self._stream(model, question), media_type="text/event-stream")

    async def _stream(self, model: str, question: str) -> AsyncIterator[str]:
        if model == "stall":
            yield _chunk('{"geographic": ')
            await asyncio.sleep(30)
            return
        if model == "where-judge":
            verdict = {"geographic": "where" in question.lower(), "reason": "The rule of this judge."}
            text = json.dumps(verdict)
        else:
            text = ANSWERS[model]
        for i in range(0, len(text), 7):
            yield _chunk(text[i : i + 7])
        yield "data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}) + "\n\n"
        yield "data: [DONE]\n\n"


def _chunk(text: str) -> str:
    payload = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return "data: " + json.dumps(payload) + "\n\n"
