"""OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, OpenRouter,
Gemini's and Anthropic's compatible endpoints): streaming, images as data
URLs, native tool calls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from arena.config import ContenderConfig
from arena.contenders.apis.http import iter_sse, open_stream, parse_json, redact_secrets
from arena.contenders.base import (
    ChatEvent,
    ChatMessage,
    ContenderError,
    GenerationLimits,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
)
from arena.contenders.deps import ProviderDeps, limits_of


def build_openai(cfg: ContenderConfig, deps: ProviderDeps) -> OpenAIChat:
    if not cfg.base_url:
        raise ValueError(f"contender {cfg.name!r}: provider 'openai' needs base_url")
    if not cfg.model:
        raise ValueError(f"contender {cfg.name!r}: provider 'openai' needs model")
    return OpenAIChat(
        http=deps.client_for(cfg.base_url),
        base_url=cfg.base_url,
        model=cfg.model,
        api_key=cfg.api_key(),
        limits=limits_of(cfg),
        supports_tools=bool(cfg.options.get("tools", True)),
        extra_body=dict(cfg.options.get("extra_body", {})),
        stream_usage=bool(cfg.options.get("stream_usage", True)),
        # reasoning models (o-series, gpt-5) take max_completion_tokens and no temperature
        max_tokens_field=str(cfg.options.get("max_tokens_field", "max_tokens")),
        send_temperature=bool(cfg.options.get("send_temperature", True)),
    )


@dataclass
class OpenAIChat:
    """One model behind an OpenAI-compatible `/chat/completions` endpoint."""

    http: httpx.AsyncClient
    base_url: str
    model: str
    api_key: str = field(default="", repr=False)  # reprs reach logs and error trackers
    limits: GenerationLimits = field(default_factory=GenerationLimits)
    supports_tools: bool = True
    extra_body: dict[str, Any] = field(default_factory=dict)
    stream_usage: bool = True
    max_tokens_field: str = "max_tokens"
    send_temperature: bool = True

    async def chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = ()) -> AsyncIterator[ChatEvent]:
        who = "The model API"  # shown to the voter before the reveal: no model name
        body = self._body(messages, tools)
        headers = {"Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        calls = _ToolCallBuffer()
        finished = False
        async with open_stream(
            self.http,
            self.base_url.rstrip("/") + "/chat/completions",
            body=body,
            headers=headers,
            limits=self.limits,
            who=who,
        ) as response:
            async for message in iter_sse(response, self.limits, who):
                if message.data.strip() == "[DONE]":
                    finished = True
                    break
                chunk = parse_json(message.data, who)
                if not isinstance(chunk, dict):
                    raise ContenderError(f"{who}: the model server sent a malformed chunk.")
                if "error" in chunk:  # some servers report errors inside the stream
                    error = chunk["error"]
                    detail = error.get("message", "") if isinstance(error, dict) else str(error)
                    raise ContenderError(
                        f"{who}: the model server reported an error: {redact_secrets(str(detail)[:300], headers)}"
                    )
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if text := delta.get("content"):
                        yield TextDelta(text)
                    for part in delta.get("tool_calls") or []:
                        calls.add(part)
                    if choice.get("finish_reason"):
                        finished = True
                if usage := chunk.get("usage"):
                    yield Usage(usage.get("prompt_tokens"), usage.get("completion_tokens"))
        if not finished:
            raise ContenderError(f"{who}: the stream ended before the answer was complete.", retryable=True)
        for call in calls.finish():
            yield call

    def _body(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m for message in messages for m in _to_openai(message)],
            "stream": True,
            self.max_tokens_field: self.limits.max_tokens,
        }
        if self.limits.temperature is not None and self.send_temperature:
            body["temperature"] = self.limits.temperature
        if self.stream_usage:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in tools
            ]
        body.update(self.extra_body)
        return body


def _to_openai(message: ChatMessage) -> list[dict[str, Any]]:
    if message.role == "tool":
        out: list[dict[str, Any]] = [
            {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
        ]
        if message.images:  # tool messages carry text only; images follow as a user turn
            out.append(
                {"role": "user", "content": _parts(f"Images from {message.name or 'the tool'}:", message.images)}
            )
        return out
    if message.role == "assistant":
        entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
        if message.tool_calls:
            entry["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in message.tool_calls
            ]
        return [entry]
    if message.images:
        return [{"role": message.role, "content": _parts(message.content, message.images)}]
    return [{"role": message.role, "content": message.content}]


def _parts(text: str, images: Sequence[Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts += [{"type": "image_url", "image_url": {"url": image.data_url()}} for image in images]
    return parts


class _ToolCallBuffer:
    """Tool calls arrive in fragments keyed by index; arguments are JSON text
    split across chunks."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, str]] = {}

    def add(self, part: dict[str, Any]) -> None:
        index = part.get("index", len(self._calls))
        call = self._calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
        call["id"] = part.get("id") or call["id"]
        function = part.get("function") or {}
        call["name"] = function.get("name") or call["name"]
        call["arguments"] += function.get("arguments") or ""

    def finish(self) -> list[ToolCall]:
        calls = []
        for index, call in sorted(self._calls.items()):
            raw = call["arguments"]
            try:
                arguments = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError:
                arguments = None
            if not isinstance(arguments, dict):
                arguments = {}
            calls.append(
                ToolCall(id=call["id"] or f"call_{index}", name=call["name"], arguments=arguments, raw_arguments=raw)
            )
        return calls
