"""Anthropic's native Messages API as a `ChatModel`.

One POST to `{base_url}/v1/messages` with `stream: true`; the answer comes
back as server-sent events (`message_start`, `content_block_start/delta/stop`,
`message_delta`, `message_stop`, `ping`, `error`). Text deltas are yielded as
they arrive; `tool_use` blocks are assembled from their `input_json_delta`
pieces and yielded as `ToolCall`s when the block closes; usage comes from
`message_start` (input) and `message_delta` (output).

With extended thinking on, the API wants a turn's thinking blocks (with
their signatures) sent back in front of its `tool_use` blocks; a `ToolCall`
has no room for them, so the client keeps them, keyed by the first call's id.

The HTTP plumbing (connect-only retries, stall and total timeouts, the API's
error message on 4xx/5xx) is shared with the other clients in
`arena.contenders.apis.http`.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from arena.config import ContenderConfig
from arena.contenders.apis.http import SSEMessage, iter_sse, open_stream, parse_json
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

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
_THINKING_KEPT = 4096


def build_anthropic(cfg: ContenderConfig, deps: ProviderDeps) -> AnthropicChat:
    """Options: `anthropic_version`, `extra_body` (merged into each request,
    e.g. `{thinking = {type = "enabled", budget_tokens = 2048}}`), `stall_timeout`."""
    if not cfg.model:
        raise ValueError(f"contender {cfg.name!r}: provider 'anthropic' needs `model`")
    return AnthropicChat(
        http=deps.client_for(cfg.base_url or DEFAULT_BASE_URL),
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
    api_key: str | None = field(default=None, repr=False)  # tests and embedders may pass the key directly
    supports_tools: bool = True
    _thinking: OrderedDict[str, list[dict[str, Any]]] = field(default_factory=OrderedDict, repr=False)

    async def chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = ()) -> AsyncIterator[ChatEvent]:
        who = "The model API"  # shown to the voter before the reveal: no model name
        body = self._request_body(messages, tools)
        async with open_stream(
            self.http,
            f"{self.base_url}/v1/messages",
            body=body,
            headers=self._headers(),
            limits=self.limits,
            who=who,
        ) as response:
            thinking: list[dict[str, Any]] = []
            first_call = ""
            async for event in _read_events(iter_sse(response, self.limits, who), who, thinking):
                if isinstance(event, ToolCall) and not first_call:
                    first_call = event.id
                yield event
        if thinking and first_call:
            self._thinking[first_call] = thinking
            while len(self._thinking) > _THINKING_KEPT:
                self._thinking.popitem(last=False)

    def _request_body(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.limits.max_tokens,
            "messages": to_anthropic_messages(messages, self._thinking, tools_offered=bool(tools)),
            "stream": True,
        }
        if system:
            body["system"] = system
        thinking_on = (self.extra_body.get("thinking") or {}).get("type") == "enabled"
        if self.limits.temperature is not None and not thinking_on:  # the API refuses both together
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
            raise ContenderError(f"no Anthropic API key: set the environment variable {self.api_key_env}.")
        return {
            "x-api-key": key,
            "anthropic-version": self.api_version,
            "content-type": "application/json",
            "accept": "text/event-stream",
        }


def to_anthropic_messages(
    messages: Sequence[ChatMessage],
    thinking: Mapping[str, list[dict[str, Any]]] | None = None,
    *,
    tools_offered: bool = True,
) -> list[dict[str, Any]]:
    """Our chat history in the Messages API's shape.

    Tool results travel as `tool_result` blocks inside a *user* turn, and the
    API wants user and assistant turns to alternate, so consecutive user-side
    messages (tool results, then maybe a new user note) merge into one turn.

    The API refuses `tool_use` and `tool_result` blocks in a request that
    defines no tools, as GATE's forced last turn does: then earlier calls and
    their results are told in text (with their images) instead.
    """
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        blocks: list[dict[str, Any]]
        if not tools_offered and (m.role == "tool" or m.tool_calls):
            role, blocks = _told_in_text(m)
        elif m.role == "assistant":
            blocks = []
            if m.tool_calls and thinking and m.tool_calls[0].id in thinking:
                blocks += thinking[m.tool_calls[0].id]  # signed thinking goes first, unchanged
            if m.content.strip():  # the API refuses a text block of only whitespace
                blocks.append({"type": "text", "text": m.content})
            for call in m.tool_calls:
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
            role = "assistant"
        elif m.role == "tool":
            inner: list[dict[str, Any]] = [{"type": "text", "text": m.content if m.content.strip() else "(no output)"}]
            inner += [_image_block(img.base64()) for img in m.images]
            blocks = [{"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": inner}]
            role = "user"
        else:
            blocks = [_image_block(img.base64()) for img in m.images]
            if m.content.strip():
                blocks.append({"type": "text", "text": m.content})
            role = "user"
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _told_in_text(m: ChatMessage) -> tuple[str, list[dict[str, Any]]]:
    """A tool call or its result as plain blocks (thinking is left out with the calls)."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": m.told_in_text()}]
    if m.role == "tool":
        return "user", blocks + [_image_block(img.base64()) for img in m.images]
    return "assistant", blocks


def _image_block(data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": data}}


# -- the event stream ----------------------------------------------------------


@dataclass
class _ToolBlock:
    id: str
    name: str
    parts: list[str] = field(default_factory=list)
    start_input: dict[str, Any] = field(default_factory=dict)


async def _read_events(
    messages: AsyncIterator[SSEMessage], who: str, thinking: list[dict[str, Any]] | None = None
) -> AsyncIterator[ChatEvent]:
    """Chat events from the SSE messages; the turn's thinking blocks are
    appended to `thinking` for the next request."""
    thinking = [] if thinking is None else thinking
    thoughts: dict[int, dict[str, Any]] = {}
    input_tokens: int | None = None
    output_tokens: int | None = None
    tools: dict[int, _ToolBlock] = {}
    finished = False
    async for message in messages:
        if message.event == "ping":
            continue
        event = parse_json(message.data, who)
        kind = event.get("type") if isinstance(event, dict) else None
        if not isinstance(kind, str):
            raise ContenderError(f"{who}: the model server sent a malformed chunk.")
        if kind == "error":  # e.g. overloaded_error after the answer began
            error = event.get("error")
            if not isinstance(error, dict):
                error = {"message": str(error or "")}
            raise ContenderError(
                f"{who}: the model server reported an error mid-answer: "
                f"{error.get('type', 'error')}: {str(error.get('message', ''))[:300]}",
                retryable=True,
            )
        try:
            if kind == "message_start":
                usage = (event.get("message") or {}).get("usage") or {}
                input_tokens = _int_or_none(usage.get("input_tokens"))
                output_tokens = _int_or_none(usage.get("output_tokens"))
            elif kind == "content_block_start":
                content = event.get("content_block") or {}
                if content.get("type") == "tool_use":
                    tools[int(event.get("index", 0))] = _ToolBlock(
                        id=str(content.get("id", "")),
                        name=str(content.get("name", "")),
                        start_input=content.get("input") or {},
                    )
                elif content.get("type") == "text" and content.get("text"):
                    yield TextDelta(str(content["text"]))
                elif content.get("type") in ("thinking", "redacted_thinking"):
                    thoughts[int(event.get("index", 0))] = dict(content)
            elif kind == "content_block_delta":
                delta = event.get("delta") or {}
                if delta.get("type") == "text_delta" and delta.get("text"):
                    yield TextDelta(str(delta["text"]))
                elif delta.get("type") == "input_json_delta":
                    pending = tools.get(int(event.get("index", 0)))
                    if pending is not None:
                        pending.parts.append(str(delta.get("partial_json", "")))
                elif delta.get("type") in ("thinking_delta", "signature_delta"):
                    # not part of the answer, but sent back with the turn's tool calls
                    thought = thoughts.get(int(event.get("index", 0)))
                    if thought is not None:
                        key = "thinking" if delta["type"] == "thinking_delta" else "signature"
                        thought[key] = str(thought.get(key, "")) + str(delta.get(key, ""))
            elif kind == "content_block_stop":
                index = int(event.get("index", 0))
                if index in thoughts:
                    thinking.append(thoughts.pop(index))
                done = tools.pop(index, None)
                if done is not None:
                    yield _tool_call(done)
            elif kind == "message_delta":
                usage = event.get("usage") or {}
                if usage.get("output_tokens") is not None:
                    output_tokens = _int_or_none(usage.get("output_tokens"))
                if usage.get("input_tokens") is not None:
                    input_tokens = _int_or_none(usage.get("input_tokens"))
            elif kind == "message_stop":
                finished = True
        except (ValueError, TypeError, AttributeError) as exc:  # a field of the wrong shape
            raise ContenderError(f"{who}: the model server sent a malformed chunk.") from exc
        if finished:
            break
    if not finished:
        raise ContenderError(f"{who}: the stream ended before the answer was complete.", retryable=True)
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


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None
