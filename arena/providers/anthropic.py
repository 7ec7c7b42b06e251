"""Anthropic's native Messages API as a `ChatModel`.

One POST to `{base_url}/v1/messages` with `stream: true`; the answer comes
back as server-sent events (`message_start`, `content_block_start/delta/stop`,
`message_delta`, `message_stop`, `ping`, `error`). Text deltas are yielded as
they arrive; `tool_use` blocks are assembled from their `input_json_delta`
pieces and yielded as `ToolCall`s when the block closes; usage comes from
`message_start` (input) and `message_delta` (output).

Timeouts: `stall_timeout` bounds every wait for the next line, `timeout`
bounds the whole answer. Only connection failures are retried (nothing was
sent yet, so a retry cannot double-bill); everything else becomes a
`ContenderError` a voter can read.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from arena.config import ContenderConfig
from arena.providers.base import (
    ChatEvent,
    ChatMessage,
    ContenderError,
    GenerationLimits,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
)
from arena.providers.registry import ProviderDeps, limits_of, register_chat

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


@register_chat("anthropic")
def build_anthropic(cfg: ContenderConfig, deps: ProviderDeps) -> AnthropicChat:
    """Options: `anthropic_version`, `extra_body` (merged into each request,
    e.g. `{thinking = {type = "enabled", budget_tokens = 2048}}`), `stall_timeout`."""
    if not cfg.model:
        raise ValueError(f"contender {cfg.name!r}: provider 'anthropic' needs `model`")
    return AnthropicChat(
        http=deps.http,
        model=cfg.model,
        base_url=(cfg.base_url or DEFAULT_BASE_URL).rstrip("/"),
        api_key_env=cfg.api_key_env or "ANTHROPIC_API_KEY",
        limits=limits_of(cfg),
        api_version=str(cfg.options.get("anthropic_version", API_VERSION)),
        extra_body=dict(cfg.options.get("extra_body", {})),
    )


@dataclass
class AnthropicChat:
    http: httpx.AsyncClient
    model: str
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = "ANTHROPIC_API_KEY"
    limits: GenerationLimits = field(default_factory=GenerationLimits)
    api_version: str = API_VERSION
    extra_body: dict[str, Any] = field(default_factory=dict)
    api_key: str | None = None  # tests and embedders may pass the key directly
    supports_tools: bool = True

    async def chat(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[ChatEvent]:
        body = self._request_body(messages, tools)
        deadline = time.monotonic() + self.limits.timeout
        async with _open_stream(self, body) as response:
            async for event in _read_events(response, self.limits, deadline):
                yield event

    def _request_body(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.limits.max_tokens,
            "messages": to_anthropic_messages(messages),
            "stream": True,
        }
        if system:
            body["system"] = system
        if self.limits.temperature is not None:
            body["temperature"] = self.limits.temperature
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
        body.update(self.extra_body)
        return body

    def _headers(self) -> dict[str, str]:
        key = self.api_key if self.api_key is not None else os.environ.get(self.api_key_env, "")
        if not key:
            raise ContenderError(f"no API key: set the environment variable {self.api_key_env}")
        return {
            "x-api-key": key,
            "anthropic-version": self.api_version,
            "content-type": "application/json",
            "accept": "text/event-stream",
        }


def to_anthropic_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Our chat history in the Messages API's shape.

    Tool results travel as `tool_result` blocks inside a *user* turn, and the
    API wants user and assistant turns to alternate, so consecutive user-side
    messages (tool results, then maybe a new user note) merge into one turn.
    """
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            for call in m.tool_calls:
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
            role = "assistant"
        elif m.role == "tool":
            inner: list[dict[str, Any]] = [{"type": "text", "text": m.content or "(no output)"}]
            inner += [_image_block(img.base64()) for img in m.images]
            blocks = [{"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": inner}]
            role = "user"
        else:
            blocks = [_image_block(img.base64()) for img in m.images]
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            role = "user"
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _image_block(data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": data}}


# -- HTTP ----------------------------------------------------------------------


class _open_stream:
    """POST the request and hand back the streaming response once its status
    is known to be 200; retry only when the connection could not be made."""

    def __init__(self, chat: AnthropicChat, body: dict[str, Any]) -> None:
        self.chat = chat
        self.body = body
        self.response: httpx.Response | None = None

    async def __aenter__(self) -> httpx.Response:
        chat = self.chat
        headers = chat._headers()
        timeout = httpx.Timeout(
            connect=min(10.0, chat.limits.timeout),
            read=chat.limits.stall_timeout,
            write=chat.limits.stall_timeout,
            pool=chat.limits.stall_timeout,
        )
        request = chat.http.build_request(
            "POST", f"{chat.base_url}/v1/messages", json=self.body, headers=headers, timeout=timeout
        )
        for attempt in range(chat.limits.connect_retries + 1):
            try:
                self.response = await chat.http.send(request, stream=True)
                break
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt == chat.limits.connect_retries:
                    raise ContenderError(
                        f"Anthropic API unreachable at {chat.base_url}: {_describe(exc)}", retryable=True
                    ) from exc
                await asyncio.sleep(0.2 * 2**attempt)
            except httpx.TimeoutException as exc:
                raise ContenderError("Anthropic API did not answer in time", retryable=True) from exc
            except httpx.HTTPError as exc:
                raise ContenderError(f"Anthropic API request failed: {_describe(exc)}") from exc
        assert self.response is not None
        if self.response.status_code != 200:
            try:
                raw = await asyncio.wait_for(self.response.aread(), chat.limits.stall_timeout)
            except (httpx.HTTPError, asyncio.TimeoutError):
                raw = b""
            finally:
                await self.response.aclose()
            raise _status_error(self.response.status_code, raw)
        return self.response

    async def __aexit__(self, *exc_info: object) -> None:
        if self.response is not None:
            await self.response.aclose()


def _status_error(status: int, raw: bytes) -> ContenderError:
    """`{"type": "error", "error": {"type": ..., "message": ...}}` -> a readable error."""
    kind, message = "", ""
    try:
        error = json.loads(raw).get("error") or {}
        kind, message = str(error.get("type", "")), str(error.get("message", ""))
    except (ValueError, AttributeError):
        message = raw[:200].decode("utf-8", "replace").strip()
    detail = f"{kind}: {message}" if kind and message else (message or kind or "no details")
    if status == 429:
        return ContenderError(f"Anthropic API rate limit reached (429, {detail})", retryable=True)
    if status == 529:
        return ContenderError(f"Anthropic API is overloaded (529, {detail})", retryable=True)
    if status in (401, 403):
        return ContenderError(f"Anthropic API refused the key ({status}, {detail})")
    return ContenderError(f"Anthropic API error {status} ({detail})", retryable=status >= 500)


# -- the event stream ----------------------------------------------------------


@dataclass
class _ToolBlock:
    id: str
    name: str
    parts: list[str] = field(default_factory=list)
    start_input: dict[str, Any] = field(default_factory=dict)


async def _read_events(
    response: httpx.Response, limits: GenerationLimits, deadline: float
) -> AsyncIterator[ChatEvent]:
    input_tokens: int | None = None
    output_tokens: int | None = None
    tools: dict[int, _ToolBlock] = {}
    finished = False
    async for name, data in _sse_events(response, limits, deadline):
        if name == "ping":
            continue
        try:
            event = json.loads(data)
            kind = event["type"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ContenderError(f"Anthropic API sent a malformed event: {data[:120]!r}") from exc
        if kind == "error":
            error = event.get("error") or {}
            raise ContenderError(
                f"Anthropic API failed mid-answer ({error.get('type', 'error')}: {error.get('message', '')})",
                retryable=True,
            )
        if kind == "message_start":
            usage = (event.get("message") or {}).get("usage") or {}
            input_tokens = _int_or_none(usage.get("input_tokens"))
            output_tokens = _int_or_none(usage.get("output_tokens"))
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                tools[int(event.get("index", 0))] = _ToolBlock(
                    id=str(block.get("id", "")),
                    name=str(block.get("name", "")),
                    start_input=block.get("input") or {},
                )
            elif block.get("type") == "text" and block.get("text"):
                yield TextDelta(block["text"])
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta" and delta.get("text"):
                yield TextDelta(str(delta["text"]))
            elif delta.get("type") == "input_json_delta":
                block = tools.get(int(event.get("index", 0)))
                if block is not None:
                    block.parts.append(str(delta.get("partial_json", "")))
            # thinking_delta / signature_delta / citations: not part of the answer
        elif kind == "content_block_stop":
            block = tools.pop(int(event.get("index", 0)), None)
            if block is not None:
                yield _tool_call(block)
        elif kind == "message_delta":
            usage = event.get("usage") or {}
            if usage.get("output_tokens") is not None:
                output_tokens = _int_or_none(usage.get("output_tokens"))
            if usage.get("input_tokens") is not None:
                input_tokens = _int_or_none(usage.get("input_tokens"))
        elif kind == "message_stop":
            finished = True
            break
    if not finished:
        raise ContenderError("Anthropic API stream ended before the answer was complete", retryable=True)
    if input_tokens is not None or output_tokens is not None:
        yield Usage(input_tokens=input_tokens, output_tokens=output_tokens)


def _tool_call(block: _ToolBlock) -> ToolCall:
    raw = "".join(block.parts)
    if not raw.strip():
        return ToolCall(id=block.id, name=block.name, arguments=dict(block.start_input), raw_arguments="")
    try:
        arguments = json.loads(raw)
    except ValueError:
        return ToolCall(id=block.id, name=block.name, arguments={}, raw_arguments=raw)
    if not isinstance(arguments, dict):
        return ToolCall(id=block.id, name=block.name, arguments={}, raw_arguments=raw)
    return ToolCall(id=block.id, name=block.name, arguments=arguments, raw_arguments=raw)


async def _sse_events(
    response: httpx.Response, limits: GenerationLimits, deadline: float
) -> AsyncIterator[tuple[str, str]]:
    """(event name, data) pairs; each wait is bounded by the stall timeout and
    by what is left of the total timeout."""
    lines = response.aiter_lines()
    name, data = "", []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ContenderError(f"Anthropic API answer took longer than {limits.timeout:g} s", retryable=True)
        try:
            line = await asyncio.wait_for(anext(lines), min(limits.stall_timeout, remaining))
        except StopAsyncIteration:
            break
        except (asyncio.TimeoutError, httpx.ReadTimeout) as exc:
            if time.monotonic() >= deadline:
                raise ContenderError(
                    f"Anthropic API answer took longer than {limits.timeout:g} s", retryable=True
                ) from exc
            raise ContenderError(
                f"Anthropic API stalled: nothing received for {limits.stall_timeout:g} s", retryable=True
            ) from exc
        except httpx.HTTPError as exc:
            raise ContenderError(f"Anthropic API stream broke: {_describe(exc)}", retryable=True) from exc
        if line == "":
            if data:
                yield name or "message", "\n".join(data)
            name, data = "", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield name or "message", "\n".join(data)


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None
