"""Google's Gemini API (`streamGenerateContent?alt=sse`) as a `ChatModel`.

Each server-sent event carries one `GenerateContentResponse` chunk:
`candidates[0].content.parts` (text, `functionCall`, or a `thought` summary we
skip), a `finishReason` on the last one and `usageMetadata`. There is no
end-of-stream marker, so an answer is complete only once a chunk carried a
`finishReason`; a stream that ends before that broke.

Thinking models attach a `thoughtSignature` to function calls and want it
back with the call in the next turn; a `ToolCall` has no field for it, so the
client keeps a small map from call id to signature.

The HTTP plumbing (connect-only retries, stall and total timeouts, the API's
error message on 4xx/5xx) is shared with the other clients in
`arena.contenders.apis.http`.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
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

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
# Finish reasons after which an empty answer means the API withheld it.
_BLOCKED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "OTHER"}
# The OpenAPI subset Gemini accepts for function parameters.
_SCHEMA_KEYS = {
    "type", "format", "description", "nullable", "enum", "properties", "required", "items",
    "minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength", "pattern",
    "anyOf", "propertyOrdering", "title", "default",
}  # fmt: skip
_SIGNATURES_KEPT = 4096


def build_gemini(cfg: ContenderConfig, deps: ProviderDeps) -> GeminiChat:
    """Options: `api_version` (default v1beta), `generation_config` (merged into
    `generationConfig`, e.g. `{thinkingConfig = {thinkingBudget = 0}}`),
    `extra_body` (e.g. `safetySettings`), `stall_timeout`."""
    if not cfg.model:
        raise ValueError(f"contender {cfg.name!r}: provider 'gemini' needs `model`")
    return GeminiChat(
        http=deps.client_for(cfg.base_url or DEFAULT_BASE_URL),
        model=cfg.model.removeprefix("models/"),
        base_url=(cfg.base_url or DEFAULT_BASE_URL).rstrip("/"),
        api_key_env=cfg.api_key_env or "GEMINI_API_KEY",
        limits=limits_of(cfg),
        api_version=str(cfg.options.get("api_version", "v1beta")),
        generation_config=dict(cfg.options.get("generation_config", {})),
        extra_body=dict(cfg.options.get("extra_body", {})),
    )


@dataclass
class _CallMeta:
    from_api: bool  # the API gave the id (else we made it up and must not send it back)
    signature: str | None


@dataclass
class GeminiChat:
    http: httpx.AsyncClient
    model: str
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = "GEMINI_API_KEY"
    limits: GenerationLimits = field(default_factory=GenerationLimits)
    api_version: str = "v1beta"
    generation_config: dict[str, Any] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)
    api_key: str | None = field(default=None, repr=False)  # tests and embedders may pass the key directly
    supports_tools: bool = True
    _calls: OrderedDict[str, _CallMeta] = field(default_factory=OrderedDict, repr=False)

    async def chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = ()) -> AsyncIterator[ChatEvent]:
        who = "The model API"  # shown to the voter before the reveal: no model name
        body = self._request_body(messages, tools)
        url = f"{self.base_url}/{self.api_version}/models/{self.model}:streamGenerateContent?alt=sse"
        async with open_stream(
            self.http, url, body=body, headers=self._headers(), limits=self.limits, who=who
        ) as response:
            async for event in self._read_chunks(iter_sse(response, self.limits, who), who):
                yield event

    def _request_body(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        config: dict[str, Any] = {"maxOutputTokens": self.limits.max_tokens}
        if self.limits.temperature is not None:
            config["temperature"] = self.limits.temperature
        config.update(self.generation_config)
        contents = self.to_gemini_contents(messages, tools_offered=bool(tools))
        body: dict[str, Any] = {"contents": contents, "generationConfig": config}
        system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {"name": t.name, "description": t.description, "parameters": _schema(t.parameters)}
                        for t in tools
                    ]
                }
            ]
        body.update(self.extra_body)
        return body

    def to_gemini_contents(
        self, messages: Sequence[ChatMessage], *, tools_offered: bool = True
    ) -> list[dict[str, Any]]:
        """Our chat history as `contents`: roles `user` / `model`; tool results
        are `functionResponse` parts of a user turn (with any images the tool
        made as inline data beside them); same-role neighbours merge. A request
        that declares no functions (GATE's forced last turn) tells earlier calls
        and results in text instead, as for the Messages API."""
        contents: list[dict[str, Any]] = []
        for m in messages:
            if m.role == "system":
                continue
            parts: list[dict[str, Any]] = []
            if not tools_offered and (m.role == "tool" or m.tool_calls):
                role = "user" if m.role == "tool" else "model"
                parts.append({"text": m.told_in_text()})
                parts += [_inline_image(img.base64()) for img in m.images]
            elif m.role == "assistant":
                role = "model"
                if m.content:
                    parts.append({"text": m.content})
                for call in m.tool_calls:
                    meta = self._calls.get(call.id)
                    function_call: dict[str, Any] = {"name": call.name, "args": call.arguments}
                    if meta is not None and meta.from_api:
                        function_call["id"] = call.id
                    part: dict[str, Any] = {"functionCall": function_call}
                    if meta is not None and meta.signature:
                        part["thoughtSignature"] = meta.signature
                    parts.append(part)
            elif m.role == "tool":
                role = "user"
                meta = self._calls.get(m.tool_call_id or "")
                function_response: dict[str, Any] = {
                    "name": m.name or "tool",
                    "response": {"content": m.content or "(no output)"},
                }
                if meta is not None and meta.from_api:
                    function_response["id"] = m.tool_call_id
                parts.append({"functionResponse": function_response})
                parts += [_inline_image(img.base64()) for img in m.images]
            else:
                role = "user"
                parts += [_inline_image(img.base64()) for img in m.images]
                if m.content:
                    parts.append({"text": m.content})
            if not parts:
                continue
            if contents and contents[-1]["role"] == role:
                contents[-1]["parts"].extend(parts)
            else:
                contents.append({"role": role, "parts": parts})
        return contents

    def _headers(self) -> dict[str, str]:
        key = self.api_key if self.api_key is not None else os.environ.get(self.api_key_env, "")
        if not key:
            raise ContenderError(f"no Gemini API key: set the environment variable {self.api_key_env}.")
        return {"x-goog-api-key": key, "content-type": "application/json", "accept": "text/event-stream"}

    async def _read_chunks(self, messages: AsyncIterator[SSEMessage], who: str) -> AsyncIterator[ChatEvent]:
        usage: dict[str, Any] = {}
        finish: str | None = None
        wrote_anything = False
        async for message in messages:
            chunk = parse_json(message.data, who)
            if isinstance(chunk, list) and chunk:  # errors sometimes come wrapped in a list
                chunk = chunk[0]
            if not isinstance(chunk, dict):
                raise ContenderError(f"{who}: the model server sent a malformed chunk.")
            if "error" in chunk:
                raise ContenderError(
                    f"{who}: the model server reported an error mid-answer: {_error_detail(chunk)}", retryable=True
                )
            try:
                block = (chunk.get("promptFeedback") or {}).get("blockReason")
                if block:
                    raise ContenderError(f"{who}: the API refused to answer this prompt (blocked: {block}).")
                usage = chunk.get("usageMetadata") or usage
                if not isinstance(usage, dict):
                    raise TypeError("usageMetadata is not an object")
                candidates = chunk.get("candidates") or []
                candidate = candidates[0] if candidates else {}
                parts = (candidate.get("content") or {}).get("parts") or []
                finish = candidate.get("finishReason") or finish
                events = [self._part_event(part) for part in parts if not part.get("thought")]
            except (ValueError, TypeError, AttributeError, IndexError) as exc:  # a field of the wrong shape
                raise ContenderError(f"{who}: the model server sent a malformed chunk.") from exc
            for event in events:
                if event is not None:
                    wrote_anything = True
                    yield event
        if finish is None:
            raise ContenderError(f"{who}: the stream ended before the answer was complete.", retryable=True)
        if finish in _BLOCKED and not wrote_anything:
            raise ContenderError(f"{who}: the API withheld the answer (finish reason {finish}).")
        if usage:
            yield Usage(
                input_tokens=_int_or_none(usage.get("promptTokenCount")),
                output_tokens=_output_tokens(usage),
            )

    def _part_event(self, part: dict[str, Any]) -> ChatEvent | None:
        # A thought summary is skipped by the caller; text and function calls are the answer.
        if "functionCall" in part:
            return self._tool_call(part)
        if part.get("text"):
            return TextDelta(str(part["text"]))
        return None

    def _tool_call(self, part: dict[str, Any]) -> ToolCall:
        call = part.get("functionCall") or {}
        api_id = call.get("id")
        call_id = str(api_id) if api_id else f"call_{uuid.uuid4().hex[:16]}"
        self._calls[call_id] = _CallMeta(from_api=bool(api_id), signature=part.get("thoughtSignature"))
        while len(self._calls) > _SIGNATURES_KEPT:
            self._calls.popitem(last=False)
        args = call.get("args")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return ToolCall(id=call_id, name=str(call.get("name", "")), arguments={}, raw_arguments=json.dumps(args))
        return ToolCall(id=call_id, name=str(call.get("name", "")), arguments=args, raw_arguments=json.dumps(args))


def _error_detail(payload: dict[str, Any]) -> str:
    error = payload.get("error") or {}
    if not isinstance(error, dict):
        return str(error)[:200]
    status, message = str(error.get("status", "")), str(error.get("message", ""))
    return f"{status}: {message}" if status and message else (message or status or "no details")


def _schema(node: Any) -> Any:
    """Drop JSON-schema keys Gemini rejects (`additionalProperties`, `$schema`, ...)
    and write enum values as the strings the API wants."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: _schema(sub) for name, sub in value.items()}
            elif key == "enum" and isinstance(value, list):
                # the API's enum is a list of strings, whatever the type ({type: INTEGER, enum: ["2", "4"]})
                out[key] = [v if isinstance(v, str) else json.dumps(v) for v in value]
            elif key in _SCHEMA_KEYS:
                out[key] = _schema(value)
        return out
    if isinstance(node, list):
        return [_schema(item) for item in node]
    return node


def _inline_image(data: str) -> dict[str, Any]:
    return {"inline_data": {"mime_type": "image/jpeg", "data": data}}


def _output_tokens(usage: dict[str, Any]) -> int | None:
    # Thinking tokens are billed as output; count them with the answer.
    answer = _int_or_none(usage.get("candidatesTokenCount"))
    thoughts = _int_or_none(usage.get("thoughtsTokenCount"))
    if answer is None and thoughts is None:
        return None
    return (answer or 0) + (thoughts or 0)


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None
