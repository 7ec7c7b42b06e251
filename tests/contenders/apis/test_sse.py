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
    def __init__(self, pieces: list[bytes], pause: float = 0.0, stall_after: int | None = None) -> None:
        self.pieces, self.pause, self.stall_after = pieces, pause, stall_after

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i, piece in enumerate(self.pieces):
            if i == self.stall_after:  # as a transport says its read timeout ran out
                raise httpx.ReadTimeout("timed out reading")
            await asyncio.sleep(self.pause)
            yield piece


async def _read(
    pieces: list[bytes], limits: GenerationLimits | None = None, pause: float = 0.0, stall_after: int | None = None
) -> list[SSEMessage]:
    response = httpx.Response(200, stream=_Pieces(pieces, pause, stall_after))
    return [m async for m in iter_sse(response, limits or GenerationLimits(), "The model API")]


class TestIterSSE:
    @pytest.mark.parametrize("size", [1, 2, 3, 7, len(BODY)])
    def test_same_messages_for_any_cut(self, size: int) -> None:
        # one byte a read splits the CRLFs and the two bytes of "ç" across reads
        pieces = [BODY[i : i + size] for i in range(0, len(BODY), size)]
        assert asyncio.run(_read(pieces)) == MESSAGES

    def test_a_stalled_server_is_named(self) -> None:
        """The stall is the transport's read timeout (the providers' tests stall real
        servers through both clients); iter_sse names it."""
        with pytest.raises(ContenderError, match="stalled"):
            asyncio.run(_read([b"data: a\n\n", b"data: b\n\n"], stall_after=1))

    def test_an_answer_past_its_deadline_is_named(self) -> None:
        limits = GenerationLimits(timeout=0.3, stall_timeout=0.2)
        with pytest.raises(ContenderError, match="longer than"):
            asyncio.run(_read([b"data: a\n\n"] * 10, limits, pause=0.1))
