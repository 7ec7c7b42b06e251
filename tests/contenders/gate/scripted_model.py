"""A loopback OpenAI-compatible server whose answers are scripted turn by turn.

Each request takes the next `Turn`: some text (sent in small chunks), then
tool calls whose JSON arguments arrive in fragments, the way real servers
stream them. When the script runs out the last turn repeats (an endless
tool loop), except that a request telling the model to stop using tools
gets `forced_answer` if one is set. Every request body is kept.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Call:
    name: str
    arguments: str  # raw JSON text, possibly broken on purpose


@dataclass
class Turn:
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    delay: float = 0.0  # seconds between chunks


class ScriptedModelServer:
    def __init__(self, turns: list[Turn], forced_answer: str | None = None) -> None:
        self.turns = list(turns)
        self.forced_answer = forced_answer
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        last = body["messages"][-1]
        if self.forced_answer is not None and "Do not call any more tools" in _text(last):
            turn = Turn(text=self.forced_answer)
        elif len(self.requests) <= len(self.turns):
            turn = self.turns[len(self.requests) - 1]
        else:
            turn = self.turns[-1]
        return StreamingResponse(self._stream(turn, len(self.requests)), media_type="text/event-stream")

    async def _stream(self, turn: Turn, n: int) -> AsyncIterator[str]:
        yield _chunk({"role": "assistant", "content": ""})
        for i in range(0, len(turn.text), 7):
            yield _chunk({"content": turn.text[i : i + 7]})
            if turn.delay:
                await asyncio.sleep(turn.delay)
        for index, call in enumerate(turn.calls):
            yield _chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": f"call_{n}_{index}",
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
            for i in range(0, len(call.arguments), 5):
                yield _chunk({"tool_calls": [{"index": index, "function": {"arguments": call.arguments[i : i + 5]}}]})
        yield _chunk({}, finish_reason="tool_calls" if turn.calls else "stop")
        yield "data: " + json.dumps({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10}}) + "\n\n"
        yield "data: [DONE]\n\n"


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
    payload = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return "data: " + json.dumps(payload) + "\n\n"


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(p.get("text", "") for p in content or [] if p.get("type") == "text")
