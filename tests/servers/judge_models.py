"""A loopback OpenAI-compatible server whose models are judges: they read the
request the arena sends (the benchmark's grading prompt, or a battle to
vote on) and answer by what it says, streamed in pieces over the real
chat-completions SSE protocol. The requested model name picks the judge:

Graders of benchmark runs (BrowseComp-style JSON):
* `grader-fair`    correct = the gold answer appears in the response; a
                   milestone is reached when its longest word appears in the
                   response or trajectory
* `grader-fenced`  the same verdict inside a ```json fence
* `grader-prose`   a friendly sentence, never JSON
* `grader-flaky`   prose on its first request, then as `grader-fair`
* `grader-outside` names a milestone that does not exist

Voters on battles (`{"winner": ...}`):
* `voter-longer`   the longer answer wins, tie within 10 characters (position-free)
* `voter-first`    always the first answer shown (position bias)
* `voter-both-bad` both bad when both answers say "no idea", else as `voter-longer`
* `voter-vision`   as `voter-longer`, but a 400 error unless the photo was sent
* `error-500`      the API's error body

Every request body is kept in `requests`.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

_SECTION = re.compile(r"\[(\w+)\][^\n]*:\s*\n?<<<\n(.*?)\n>>>", re.DOTALL)


class JudgeModels:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.seen: dict[str, int] = {}
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        model = str(body.get("model"))
        self.seen[model] = self.seen.get(model, 0) + 1
        if model == "error-500":
            return JSONResponse({"error": {"message": "judge is down", "type": "server_error"}}, status_code=500)
        text = user_text(body)
        if model == "voter-vision" and not has_image(body):
            return JSONResponse(
                {"error": {"message": "this judge needs the photo", "type": "invalid_request"}}, status_code=400
            )
        answer = self._answer(model, text)
        return StreamingResponse(_stream(answer), media_type="text/event-stream")

    def _answer(self, model: str, text: str) -> str:
        if model.startswith("grader-"):
            if model == "grader-prose" or (model == "grader-flaky" and self.seen[model] == 1):
                return "Looks right to me! Great answer."
            verdict = grade(text, outside=model == "grader-outside")
            body = json.dumps(verdict)
            return f"```json\n{body}\n```" if model == "grader-fenced" else body
        first, second = _between(text, "[answer_1]"), _between(text, "[answer_2]")
        if model == "voter-first":
            winner = "1"
        elif model == "voter-both-bad" and "no idea" in first and "no idea" in second:
            winner = "both_bad"
        elif abs(len(first) - len(second)) <= 10:
            winner = "tie"
        else:
            winner = "1" if len(first) > len(second) else "2"
        return json.dumps({"reasoning": "compared the two answers", "winner": winner})


def grade(text: str, *, outside: bool = False) -> dict[str, Any]:
    sections = dict(_SECTION.findall(text))
    response = sections.get("response", "")
    trajectory = sections.get("trajectory", "")
    gold = re.search(r"\[correct_answer\]: (.*)", text)
    gold_text = gold.group(1).strip() if gold else ""
    steps = re.findall(r"^(\d+)\. (.*)$", text.split("[expert_steps]", 1)[-1].split("Fields of", 1)[0], re.MULTILINE)
    seen = (response + " " + trajectory).lower()
    reached = [int(n) for n, step in steps if max(step.split(), key=len).lower().strip(".,") in seen]
    if outside:
        reached = [len(steps) + 5]
    correct = bool(gold_text) and gold_text.lower() in response.lower()
    return {
        "extracted_final_answer": gold_text if correct else "None",
        "reasoning": "compared with the gold",
        "correct": "yes" if correct else "no",
        "confidence": 80,
        "milestones_reached": reached,
    }


def user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return " ".join(p.get("text", "") for p in content if p.get("type") == "text")
    return ""


def has_image(body: dict[str, Any]) -> bool:
    return any(
        isinstance(m.get("content"), list) and any(p.get("type") == "image_url" for p in m["content"])
        for m in body.get("messages", [])
    )


def _between(text: str, label: str) -> str:
    match = re.search(re.escape(label) + r"[^\n]*\n<<<\n(.*?)\n>>>", text, re.DOTALL)
    return match.group(1) if match else ""


async def _stream(text: str) -> AsyncIterator[str]:
    for i in range(0, len(text), 9):
        yield _chunk({"content": text[i : i + 9]})
    yield _chunk({}, finish_reason="stop")
    yield "data: " + json.dumps({"choices": [], "usage": {"prompt_tokens": 400, "completion_tokens": 60}}) + "\n\n"
    yield "data: [DONE]\n\n"


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
    payload = {
        "id": "judge",
        "object": "chat.completion.chunk",
        "model": "judge",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return "data: " + json.dumps(payload) + "\n\n"
