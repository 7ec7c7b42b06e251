"""A model asked for a strict JSON verdict: its whole reply, read as one object.

The gatekeeper's LLM judge, the benchmark's grader and the battle judge all
ask a chat model for one JSON object and nothing else. This reads that reply
the same way for each: the text of one turn (an essay past a limit is no
verdict), then exactly one JSON object, a ```json fence tolerated because
models add one. What the object must hold is each caller's own check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from contextlib import aclosing
from typing import Any

from arena.contenders.base import ChatMessage, ChatModel, TextDelta

_FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*```", flags=re.DOTALL)


class MalformedVerdict(ValueError):
    """The reply is not the verdict asked for; the message says how."""


async def collect_verdict(model: ChatModel, messages: Sequence[ChatMessage], *, limit: int) -> str:
    """The whole text of one chat turn, refused once it passes `limit` characters."""
    parts: list[str] = []
    size = 0
    # aclosing: a timeout or an early raise closes the HTTP stream at once
    async with aclosing(model.chat(messages)) as events:  # type: ignore[type-var]
        async for event in events:
            if isinstance(event, TextDelta):
                parts.append(event.text)
                size += len(event.text)
                if size > limit:
                    raise MalformedVerdict("the verdict is far too long")
    return "".join(parts)


def verdict_object(text: str) -> dict[str, Any]:
    """The reply as one JSON object (inside a ```json fence or bare), else MalformedVerdict."""
    body = text.strip()
    fenced = _FENCED.fullmatch(body)
    if fenced:
        body = fenced.group(1)
    try:
        verdict = json.loads(body)
    except ValueError:
        raise MalformedVerdict(f"not JSON: {body[:80]!r}") from None
    if not isinstance(verdict, dict):
        raise MalformedVerdict("not a JSON object")
    return verdict


def fence(text: str) -> str:
    """Text to put between the prompt's <<< >>> fences: it cannot close them early."""
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")
