"""The contender protocol: what every entry of the pool speaks.

A *contender* answers one battle: `stream(prompt, image)` yields text deltas,
tool steps and usage, and raises `ContenderError` with a message a voter may
read when it fails. A *chat model* is the lower layer a provider client
implements (one HTTP API each); `ModelContender` turns a chat model into a
contender, and GATE wraps a chat model that supports tool calls.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, Protocol, runtime_checkable


class Base64(str):
    """Base64 text, or a data URL of it: a JSON string as it is, with nothing to escape, so
    a request's encoder splices it in instead of scanning it (`apis.http.encode_json`).
    Made only from `base64.b64encode`'s output."""

    @cached_property
    def ascii(self) -> bytes:  # a photo's Base64 lives as long as its ContenderImage: encoded once
        return self.encode("ascii")


@dataclass(frozen=True)
class ContenderImage:
    """A normalised photo as contenders see it: JPEG bytes, no metadata."""

    jpeg: bytes
    width: int
    height: int
    sha256: str = ""

    def data_url(self) -> Base64:
        return self._data_url

    def base64(self) -> Base64:
        return self._base64

    # both sides of a battle (and every step of an agent) send the same photo: encoded once
    @cached_property
    def _base64(self) -> Base64:
        return Base64(base64.b64encode(self.jpeg).decode("ascii"))

    @cached_property
    def _data_url(self) -> Base64:
        return Base64("data:image/jpeg;base64," + self._base64)


# -- events a contender yields -------------------------------------------------


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer's markdown, in order."""

    text: str


@dataclass(frozen=True)
class ToolStep:
    """One tool call of an agent's trajectory, shown to the voter.

    `image_refs` name images in the image store (sha256 hex) that the step
    produced, so the page can show thumbnails.
    """

    tool: str
    args: dict[str, Any]
    observation: str
    thought: str = ""
    image_refs: tuple[str, ...] = ()
    ok: bool = True


@dataclass(frozen=True)
class Usage:
    """Token counts as the API reported them (None when it did not)."""

    input_tokens: int | None = None
    output_tokens: int | None = None


ContenderEvent = TextDelta | ToolStep | Usage


class ContenderError(Exception):
    """A contender could not answer. The message is shown to the voter, so it
    names what went wrong (HTTP status, timeout, ...) and never a secret."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


@runtime_checkable
class Contender(Protocol):
    """One entry of the pool (a base model, optionally GATE-equipped)."""

    name: str
    gate: bool

    def stream(self, prompt: str, image: ContenderImage) -> AsyncIterator[ContenderEvent]:
        """Answer `prompt` about `image`, yielding events as they arrive."""
        ...


# -- the chat layer that provider clients implement ---------------------------


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to a model: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A model's request to run a tool. `arguments` is the decoded JSON object;
    `raw_arguments` keeps the text when it did not decode."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    images: Sequence[ContenderImage] = ()
    tool_calls: Sequence[ToolCall] = ()
    tool_call_id: str | None = None  # for role="tool": the call this answers
    name: str | None = None  # for role="tool": the tool's name

    def told_in_text(self) -> str:
        """A tool call, or its result, as plain text: for a request that offers no tools
        (GATE's forced last turn), where the Messages and Gemini APIs refuse call parts."""
        if self.role == "tool":
            return f"[result of {self.name or 'the tool'}] {self.content if self.content.strip() else '(no output)'}"
        calls = "\n".join(
            f"[called {c.name} with {json.dumps(c.arguments, ensure_ascii=False)}]" for c in self.tool_calls
        )
        return f"{self.content.strip()}\n{calls}" if self.content.strip() else calls


@dataclass(frozen=True)
class GenerationLimits:
    max_tokens: int = 1024
    temperature: float | None = 0.7
    timeout: float = 60.0  # seconds for the whole answer
    stall_timeout: float = 30.0  # seconds without a byte from the server
    connect_retries: int = 2


ChatEvent = TextDelta | ToolCall | Usage


class ChatModel(Protocol):
    """One model behind one API. Implemented once per provider."""

    supports_tools: bool

    def chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = ()) -> AsyncIterator[ChatEvent]:
        """Stream one assistant turn: text deltas, then any tool calls, then usage."""
        ...


@dataclass
class ModelContender:
    """A contender that asks a chat model directly, without tools."""

    name: str
    model: ChatModel
    system_prompt: str = ""
    gate: bool = False

    async def stream(self, prompt: str, image: ContenderImage) -> AsyncIterator[ContenderEvent]:
        messages: list[ChatMessage] = []
        if self.system_prompt:
            messages.append(ChatMessage(role="system", content=self.system_prompt))
        messages.append(ChatMessage(role="user", content=prompt, images=(image,)))
        async for event in self.model.chat(messages):
            if isinstance(event, ToolCall):  # not offered tools; ignore stray calls
                continue
            yield event
