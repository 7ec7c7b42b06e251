"""The upstream event-stream parser: the same messages however the body is cut into reads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from arena.contenders.apis.http import SSEMessage, iter_sse
from arena.contenders.base import ContenderError, GenerationLimits

BODY = (
    ": keep-alive\r\n\r\n"
    'data: {"content": "Paris, ça"}\r\n\r\n'
    "event: message_delta\ndata: one\ndata: two\n\n"
    "data: [DONE]\r\r"
    "data: after a lone CR, no blank line at the end"
).encode()
MESSAGES = [
    SSEMessage("message", '{"content": "Paris, ça"}'),
    SSEMessage("message_delta", "one\ntwo"),
    SSEMessage("message", "[DONE]"),
    SSEMessage("message", "after a lone CR, no blank line at the end"),
]


class _Pieces(httpx.AsyncByteStream):
    def __init__(self, pieces: list[bytes], pause: float = 0.0) -> None:
        self.pieces, self.pause = pieces, pause

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            await asyncio.sleep(self.pause)
            yield piece


async def _read(pieces: list[bytes], limits: GenerationLimits | None = None, pause: float = 0.0) -> list[SSEMessage]:
    response = httpx.Response(200, stream=_Pieces(pieces, pause))
    return [m async for m in iter_sse(response, limits or GenerationLimits(), "The model API")]


class TestIterSSE:
    @pytest.mark.parametrize("size", [1, 2, 3, 7, len(BODY)])
    def test_same_messages_for_any_cut(self, size: int) -> None:
        # one byte a read splits the CRLFs and the two bytes of "ç" across reads
        pieces = [BODY[i : i + size] for i in range(0, len(BODY), size)]
        assert asyncio.run(_read(pieces)) == MESSAGES

    def test_a_stalled_server_is_named(self) -> None:
        limits = GenerationLimits(timeout=5.0, stall_timeout=0.05)
        with pytest.raises(ContenderError, match="stalled"):
            asyncio.run(_read([b"data: a\n\n", b"data: b\n\n"], limits, pause=0.2))

    def test_an_answer_past_its_deadline_is_named(self) -> None:
        limits = GenerationLimits(timeout=0.3, stall_timeout=0.2)
        with pytest.raises(ContenderError, match="longer than"):
            asyncio.run(_read([b"data: a\n\n"] * 10, limits, pause=0.1))
