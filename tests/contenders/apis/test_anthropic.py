"""The Anthropic Messages client against a loopback server that speaks the
real wire format: chunked SSE with `event:` names, the JSON error shape, 529
overload, a stall, a connection cut mid-chunk."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import httpx
import pytest

from arena.config import ContenderConfig, PoolConfig
from arena.contenders.apis.anthropic import AnthropicChat, build_anthropic
from arena.contenders.base import (
    ChatMessage,
    ContenderError,
    ContenderImage,
    GenerationLimits,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
)
from arena.contenders.deps import ProviderDeps
from arena.images.store import LocalImageStore
from tests.servers.scripted import Script
from tests.servers.scripted import ScriptedServer as Loopback
from tests.servers.scripted import http_chunk as _chunk
from tests.servers.scripted import http_head as _head
from tests.servers.scripted import json_error as error

IMAGE = ContenderImage(jpeg=b"\xff\xd8\xff\xe0fake-jpeg\xff\xd9", width=4, height=3)
FAST = GenerationLimits(max_tokens=300, temperature=0.2, timeout=5.0, stall_timeout=0.4, connect_retries=1)


def sse(events: list[tuple[str, Any]], *, then: str = "end", pause: float = 0.0) -> Script:
    """Send `(event name, data)` pairs one chunk each; `then` = "end" (clean
    end), "stall" (say nothing more), or "cut" (drop the connection mid-chunk)."""

    async def run(writer: asyncio.StreamWriter) -> None:
        writer.write(_head(200, "text/event-stream"))
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            writer.write(_chunk(f"event: {name}\ndata: {text}\n\n".encode()))
            await writer.drain()
            if pause:
                await asyncio.sleep(pause)
        if then == "stall":
            await asyncio.sleep(30)
        elif then == "cut":
            writer.write(b'400\r\nevent: content_block_delta\ndata: {"type"')
            await writer.drain()
        else:
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    return run


def message(*blocks: list[tuple[str, Any]], input_tokens: int = 21, output_tokens: int = 9) -> list[tuple[str, Any]]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_01", "type": "message", "role": "assistant", "content": [], "model": "claude-test",
            "stop_reason": None, "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    }  # fmt: skip
    events: list[tuple[str, Any]] = [("message_start", start), ("ping", {"type": "ping"})]
    for block in blocks:
        events += block
    events += [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": output_tokens}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return events


def text_block(index: int, *pieces: str) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = [
        ("content_block_start", {"type": "content_block_start", "index": index,
                                 "content_block": {"type": "text", "text": ""}}),
    ]  # fmt: skip
    for piece in pieces:
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "text_delta", "text": piece}}))  # fmt: skip
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def tool_block(index: int, call_id: str, name: str, *json_pieces: str) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = [
        ("content_block_start", {"type": "content_block_start", "index": index,
                                 "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}}),
    ]  # fmt: skip
    for piece in json_pieces:
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "input_json_delta", "partial_json": piece}}))  # fmt: skip
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def claude(http: httpx.AsyncClient, url: str, limits: GenerationLimits = FAST) -> AnthropicChat:
    return AnthropicChat(http=http, model="claude-test", base_url=url, limits=limits, api_key="sk-ant-test")


async def collect(chat: AnthropicChat, messages: list[ChatMessage], tools: tuple[ToolSpec, ...] = ()) -> list[Any]:
    return [event async for event in chat.chat(messages, tools)]


ASK = [
    ChatMessage(role="system", content="Answer like a geographer."),
    ChatMessage(role="user", content="Where was this taken?", images=(IMAGE,)),
]
CROP = ToolSpec(
    name="crop",
    description="Crop a region of the image.",
    parameters={"type": "object", "properties": {"box": {"type": "array", "items": {"type": "number"}}},
                "required": ["box"]},
)  # fmt: skip


# -- tests ---------------------------------------------------------------------------


class TestAnthropicStreaming:
    async def test_streams_text_and_usage(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse(message(text_block(0, "Probably ", "Lisbon, ", "Portugal."))))
        events = await collect(claude(http, server.url), ASK)
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Probably Lisbon, Portugal."
        assert events[-1] == Usage(input_tokens=21, output_tokens=9)

    async def test_sends_the_messages_api_request(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse(message(text_block(0, "ok"))))
        await collect(claude(http, server.url), ASK)
        sent = server.received[0]
        assert sent.target == "/v1/messages"
        assert sent.headers["x-api-key"] == "sk-ant-test"
        assert sent.headers["anthropic-version"] == "2023-06-01"
        assert sent.header_names.count("content-type") == 1  # the provider's own, not a second one
        body = sent.body
        assert body["model"] == "claude-test" and body["stream"] is True
        assert body["system"] == "Answer like a geographer."
        assert body["max_tokens"] == 300 and body["temperature"] == 0.2
        image, text = body["messages"][0]["content"]
        assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                                     "data": IMAGE.base64()}}  # fmt: skip
        assert text == {"type": "text", "text": "Where was this taken?"}

    async def test_builder_reads_the_contender_config(
        self, server: Loopback, http: httpx.AsyncClient, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("TEST_ANTHROPIC_KEY", "sk-from-env")
        cfg = ContenderConfig(
            name="claude", provider="anthropic", model="claude-x", base_url=server.url + "/",
            api_key_env="TEST_ANTHROPIC_KEY", max_tokens=77, temperature=None, timeout=3,
            options={"extra_body": {"top_k": 5}},
        )  # fmt: skip
        deps = ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=PoolConfig(contenders=[cfg]))
        chat = build_anthropic(cfg, deps)
        server.scripts.append(sse(message(text_block(0, "ok"))))
        await collect(chat, ASK)
        body = server.received[0].body
        assert server.received[0].headers["x-api-key"] == "sk-from-env"
        assert body["max_tokens"] == 77 and "temperature" not in body and body["top_k"] == 5

    async def test_missing_key_is_a_clear_error(self, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
        chat = AnthropicChat(http=http, model="m", base_url="http://127.0.0.1:9", api_key_env="NO_SUCH_KEY_VAR")
        with pytest.raises(ContenderError, match="NO_SUCH_KEY_VAR"):
            await collect(chat, ASK)


class TestAnthropicTools:
    async def test_tool_use_blocks_become_tool_calls(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse(message(
            text_block(0, "Let me zoom in on the sign."),
            tool_block(1, "toolu_01", "crop", '{"box": [0.1', ", 0.2, 0.5,", " 0.6]}"),
            tool_block(2, "toolu_02", "crop", "{not json"),
        )))  # fmt: skip
        events = await collect(claude(http, server.url), ASK, (CROP,))
        calls = [e for e in events if isinstance(e, ToolCall)]
        assert calls[0] == ToolCall(id="toolu_01", name="crop", arguments={"box": [0.1, 0.2, 0.5, 0.6]},
                                    raw_arguments='{"box": [0.1, 0.2, 0.5, 0.6]}')  # fmt: skip
        assert calls[1].arguments == {} and calls[1].raw_arguments == "{not json"
        assert events.index(calls[0]) > 0 and isinstance(events[0], TextDelta)
        tools = server.received[0].body["tools"]
        assert tools == [{"name": "crop", "description": CROP.description, "input_schema": CROP.parameters}]

    async def test_tool_history_is_translated(self, server: Loopback, http: httpx.AsyncClient) -> None:
        crop_image = ContenderImage(jpeg=b"\xff\xd8crop\xff\xd9", width=2, height=2)
        history = [
            *ASK,
            ChatMessage(role="assistant", content="Zooming.", tool_calls=(
                ToolCall(id="toolu_01", name="crop", arguments={"box": [0, 0, 1, 1]}),
                ToolCall(id="toolu_02", name="search", arguments={"q": "Rua Augusta"}),
            )),
            ChatMessage(role="tool", content="cropped view", images=(crop_image,), tool_call_id="toolu_01",
                        name="crop"),
            ChatMessage(role="tool", content="3 results", tool_call_id="toolu_02", name="search"),
        ]  # fmt: skip
        server.scripts.append(sse(message(text_block(0, "Lisbon."))))
        await collect(claude(http, server.url), history, (CROP,))
        turns = server.received[0].body["messages"]
        assert [t["role"] for t in turns] == ["user", "assistant", "user"]
        assert turns[1]["content"] == [
            {"type": "text", "text": "Zooming."},
            {"type": "tool_use", "id": "toolu_01", "name": "crop", "input": {"box": [0, 0, 1, 1]}},
            {"type": "tool_use", "id": "toolu_02", "name": "search", "input": {"q": "Rua Augusta"}},
        ]
        first, second = turns[2]["content"]
        assert first["type"] == "tool_result" and first["tool_use_id"] == "toolu_01"
        assert first["content"][0] == {"type": "text", "text": "cropped view"}
        assert first["content"][1]["source"]["data"] == crop_image.base64()
        assert second == {"type": "tool_result", "tool_use_id": "toolu_02",
                          "content": [{"type": "text", "text": "3 results"}]}  # fmt: skip

    async def test_whitespace_only_text_is_not_sent_as_a_block(self, server: Loopback, http: httpx.AsyncClient) -> None:
        # The API refuses a text block of only whitespace (400 "text content blocks must contain
        # non-whitespace text"); a turn that said "\n\n" before its tool call made every later turn fail.
        history = [
            *ASK,
            ChatMessage(role="assistant", content="\n\n", tool_calls=(
                ToolCall(id="toolu_01", name="crop", arguments={"box": [0, 0, 1, 1]}),
            )),
            ChatMessage(role="tool", content="  \n", tool_call_id="toolu_01", name="crop"),
            ChatMessage(role="assistant", content=" "),
            ChatMessage(role="user", content="Continue."),
        ]  # fmt: skip
        server.scripts.append(sse(message(text_block(0, "Lisbon."))))
        await collect(claude(http, server.url), history, (CROP,))
        turns = server.received[0].body["messages"]
        assert [t["role"] for t in turns] == ["user", "assistant", "user"]
        assert turns[1]["content"] == [
            {"type": "tool_use", "id": "toolu_01", "name": "crop", "input": {"box": [0, 0, 1, 1]}},
        ]
        texts = [b["text"] for t in turns for b in t["content"] if b["type"] == "text"]
        texts += [c["text"] for t in turns for b in t["content"] if b["type"] == "tool_result" for c in b["content"]]
        assert all(text.strip() for text in texts)


class TestAnthropicThinking:
    async def test_signed_thinking_goes_back_with_the_tool_calls(
        self, server: Loopback, http: httpx.AsyncClient
    ) -> None:
        thinking_block: list[tuple[str, Any]] = [
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "thinking", "thinking": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "thinking_delta", "thinking": "The sign is Portuguese; "}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "thinking_delta", "thinking": "crop it."}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]  # fmt: skip
        server.scripts.append(sse(message(thinking_block, tool_block(1, "toolu_9", "crop", '{"box": [0, 0, 1, 1]}'))))
        chat = AnthropicChat(
            http=http,
            model="claude-test",
            base_url=server.url,
            limits=FAST,
            api_key="k",
            extra_body={"thinking": {"type": "enabled", "budget_tokens": 1024}},
        )
        events = await collect(chat, ASK, (CROP,))
        assert not any(isinstance(e, TextDelta) for e in events)  # thinking is not the answer
        call = next(e for e in events if isinstance(e, ToolCall))
        assert "temperature" not in server.received[0].body  # refused by the API with thinking on

        history = [
            *ASK,
            ChatMessage(role="assistant", tool_calls=(call,)),
            ChatMessage(role="tool", content="cropped", tool_call_id="toolu_9", name="crop"),
        ]
        server.scripts.append(sse(message(text_block(0, "Lisbon."))))
        await collect(chat, history, (CROP,))
        assistant = server.received[1].body["messages"][1]
        assert assistant["content"][0] == {
            "type": "thinking",
            "thinking": "The sign is Portuguese; crop it.",
            "signature": "EqQBCgIYAhIM",
        }
        assert assistant["content"][1]["type"] == "tool_use"


class TestAnthropicErrors:
    @pytest.mark.parametrize(
        ("status", "kind", "words"),
        [
            (400, "invalid_request_error", "HTTP 400 (bad request)"),
            (401, "authentication_error", "HTTP 401 (unauthorised: check the API key)"),
            (429, "rate_limit_error", "HTTP 429 (rate limited)"),
            (500, "api_error", "HTTP 500 (server error)"),
            (529, "overloaded_error", "HTTP 529 (overloaded)"),
        ],
    )
    async def test_http_errors_carry_the_api_message(
        self, server: Loopback, http: httpx.AsyncClient, status: int, kind: str, words: str
    ) -> None:
        server.scripts.append(error(status, {"type": "error", "error": {"type": kind, "message": f"details {status}"}}))
        with pytest.raises(ContenderError) as caught:
            await collect(claude(http, server.url), ASK)
        assert caught.value.message == f"The model API: {words}: details {status}"
        assert caught.value.retryable == (status in (429, 500, 529))
        assert len(server.received) == 1  # answered errors are never retried

    async def test_error_without_json_body(self, server: Loopback, http: httpx.AsyncClient) -> None:
        async def html(writer: asyncio.StreamWriter) -> None:
            writer.write(_head(502, "text/plain") + _chunk(b"upstream connect error") + b"0\r\n\r\n")

        server.scripts.append(html)
        with pytest.raises(ContenderError, match="HTTP 502 .bad gateway.: upstream connect error"):
            await collect(claude(http, server.url), ASK)

    async def test_error_event_mid_stream(self, server: Loopback, http: httpx.AsyncClient) -> None:
        events = message(text_block(0, "Half an ans"))[:4]
        events.append(("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
        server.scripts.append(sse(events))
        with pytest.raises(ContenderError, match="error mid-answer: overloaded_error: Overloaded"):
            await collect(claude(http, server.url), ASK)

    async def test_malformed_event(self, server: Loopback, http: httpx.AsyncClient) -> None:
        events = message(text_block(0, "x"))
        events.insert(2, ("content_block_delta", "{this is not json"))
        server.scripts.append(sse(events))
        with pytest.raises(ContenderError, match="malformed chunk"):
            await collect(claude(http, server.url), ASK)

    async def test_valid_json_of_the_wrong_shape(self, server: Loopback, http: httpx.AsyncClient) -> None:
        events = message(text_block(0, "x"))
        events.insert(
            2,
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": "first",
                    "content_block": {"type": "tool_use", "id": "t", "name": "n"},
                },
            ),
        )
        server.scripts.append(sse(events))
        with pytest.raises(ContenderError, match="malformed chunk"):
            await collect(claude(http, server.url), ASK)

    async def test_stall_is_cut_short(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse(message(text_block(0, "Thinking"))[:4], then="stall"))
        started = time.monotonic()
        with pytest.raises(ContenderError, match="stalled"):
            await collect(claude(http, server.url), ASK)
        assert time.monotonic() - started < 3

    async def test_total_timeout_despite_pings(self, server: Loopback, http: httpx.AsyncClient) -> None:
        pings = [("ping", {"type": "ping"})] * 40
        server.scripts.append(sse(message()[:1] + pings, pause=0.05))
        limits = GenerationLimits(timeout=0.6, stall_timeout=0.4, connect_retries=0)
        with pytest.raises(ContenderError, match="took longer than"):
            await collect(claude(http, server.url, limits), ASK)

    async def test_connection_cut_mid_stream(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse(message(text_block(0, "Lis"))[:4], then="cut"))
        with pytest.raises(ContenderError, match="broke off the stream mid-answer"):
            await collect(claude(http, server.url), ASK)

    async def test_stream_without_message_stop(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse(message(text_block(0, "Lisbon"))[:-1]))
        with pytest.raises(ContenderError, match="ended before the answer was complete"):
            await collect(claude(http, server.url), ASK)


class TestAnthropicConnectRetry:
    async def test_retries_until_the_server_is_up(self, http: httpx.AsyncClient) -> None:
        port = _free_port()
        late = Loopback(scripts=[sse(message(text_block(0, "up")))])

        async def start_late() -> None:
            await asyncio.sleep(0.05)
            await late.start(port)

        starter = asyncio.create_task(start_late())
        try:
            events = await collect(claude(http, f"http://127.0.0.1:{port}"), ASK)
        finally:
            await starter
            await late.stop()
        assert [e.text for e in events if isinstance(e, TextDelta)] == ["up"]

    async def test_unreachable_after_retries(self, http: httpx.AsyncClient) -> None:
        url = f"http://127.0.0.1:{_free_port()}"
        with pytest.raises(ContenderError, match="could not connect"):
            await collect(claude(http, url), ASK)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
