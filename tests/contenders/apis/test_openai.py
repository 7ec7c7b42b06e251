"""The OpenAI-compatible client against a real loopback server: streaming,
images as data URLs, tool calls, and every way a server can fail."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack

import httpx
import pytest

from arena.config import ContenderConfig, PoolConfig
from arena.contenders.apis.openai import OpenAIChat, build_openai
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
from tests.servers import free_port, serve_in_thread

IMAGE = ContenderImage(jpeg=b"\xff\xd8\xff\xe0fake-jpeg-bytes", width=2, height=2)
QUESTION = [ChatMessage(role="user", content="Where is this?", images=(IMAGE,))]


@pytest.fixture(autouse=True)
def _each_client(make_client: Callable[[], httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch) -> None:
    """`chat_model` makes the client of this run of the test (see conftest.py)."""
    monkeypatch.setattr(sys.modules[__name__], "new_client", make_client)


new_client: Callable[[], httpx.AsyncClient] = httpx.AsyncClient


def chat_model(base_url: str, model: str, **limits) -> tuple[httpx.AsyncClient, OpenAIChat]:
    http = new_client()
    limits = {"stall_timeout": 1.0, "timeout": 10.0, **limits}
    return http, OpenAIChat(
        http=http, base_url=base_url, model=model, api_key="sk-test-secret", limits=GenerationLimits(**limits)
    )


async def collect(model: OpenAIChat, messages=QUESTION, tools=()) -> list:
    return [event async for event in model.chat(messages, tools)]


class TestStreaming:
    async def test_streams_text_and_usage(self, openai_server):
        base_url, server = openai_server
        http, model = chat_model(base_url, "echo-x")
        async with http:
            events = await collect(model)
        text = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert "Where is this?" in text and "**Paris, France**" in text
        assert sum(isinstance(e, TextDelta) for e in events) == 5
        assert [e for e in events if isinstance(e, Usage)] == [Usage(812, 57)]

    async def test_sends_image_as_data_url_and_key_as_bearer(self, openai_server):
        base_url, server = openai_server
        http, model = chat_model(base_url, "echo-x", max_tokens=77, temperature=0.2)
        async with http:
            await collect(model)
        body, headers = server.requests[-1], server.headers[-1]
        assert headers["authorization"] == "Bearer sk-test-secret"
        # the body is encoded by the arena (encode_json), sent whole, as httpx's json= sends it
        assert headers["content-type"] == "application/json" and "transfer-encoding" not in headers
        assert body["max_tokens"] == 77 and body["temperature"] == 0.2
        assert body["stream_options"] == {"include_usage": True}
        image_part = body["messages"][0]["content"][1]
        assert image_part["image_url"]["url"] == IMAGE.data_url()


def test_the_key_is_not_in_the_client_repr():
    # reprs reach logs and error trackers (locals of a traceback, a logged contender)
    chat = OpenAIChat(http=None, base_url="http://127.0.0.1:9/v1", model="echo-x", api_key="sk-test-secret")  # type: ignore[arg-type]
    assert "sk-test-secret" not in repr(chat)


class TestFaults:
    @pytest.mark.parametrize(
        ("model", "expected"),
        [
            ("error-500", "HTTP 500 (server error): simulated failure 500"),
            ("error-429", "HTTP 429 (rate limited): simulated failure 429"),
            ("error-401", "HTTP 401 (unauthorised: check the API key): simulated failure 401"),
        ],
    )
    async def test_http_errors_carry_the_api_message(self, openai_server, model, expected):
        base_url, server = openai_server
        before = len(server.requests)
        http, chat = chat_model(base_url, model)
        async with http:
            with pytest.raises(ContenderError) as raised:
                await collect(chat)
        assert expected in raised.value.message
        assert "sk-test-secret" not in raised.value.message
        assert len(server.requests) - before == 1  # a server that answered is never retried

    async def test_a_key_quoted_back_by_the_server_is_not_shown(self, openai_server):
        http, chat = chat_model(openai_server[0], "bad-key")
        async with http:
            with pytest.raises(ContenderError) as raised:
                await collect(chat)
        assert "HTTP 401" in raised.value.message and "Incorrect API key provided" in raised.value.message
        assert "sk-test-secret" not in raised.value.message

    async def test_a_key_quoted_back_inside_the_stream_is_not_shown(self, openai_server):
        http, chat = chat_model(openai_server[0], "bad-key-in-stream")
        async with http:
            with pytest.raises(ContenderError) as raised:
                await collect(chat)
        assert "has no quota left" in raised.value.message
        assert "sk-test-secret" not in raised.value.message

    async def test_broken_stream(self, openai_server):
        http, chat = chat_model(openai_server[0], "broken")
        async with http:
            with pytest.raises(ContenderError, match="broke off|closed the connection|ended before"):
                await collect(chat)

    async def test_stall_times_out(self, openai_server):
        http, chat = chat_model(openai_server[0], "stall", stall_timeout=0.5)
        started = time.monotonic()
        async with http:
            with pytest.raises(ContenderError, match="stalled|sent nothing"):
                await collect(chat)
        assert time.monotonic() - started < 5

    async def test_malformed_chunk(self, openai_server):
        http, chat = chat_model(openai_server[0], "malformed")
        async with http:
            with pytest.raises(ContenderError, match="malformed chunk"):
                await collect(chat)

    async def test_error_inside_the_stream(self, openai_server):
        http, chat = chat_model(openai_server[0], "in-stream-error")
        async with http:
            with pytest.raises(ContenderError, match="upstream overloaded"):
                await collect(chat)

    async def test_connect_errors_are_retried_then_reported(self):
        port = free_port()  # nothing listens here
        http, chat = chat_model(f"http://127.0.0.1:{port}/v1", "echo-x", connect_retries=2)
        started = time.monotonic()
        async with http:
            with pytest.raises(ContenderError, match="could not connect"):
                await collect(chat)
        assert time.monotonic() - started >= 1.4  # backoff 0.5 s + 1.0 s: it did retry

    async def test_connect_retry_succeeds_when_the_server_comes_up(self, openai_server):
        port = free_port()
        http, chat = chat_model(f"http://127.0.0.1:{port}/v1", "echo-x", connect_retries=3)
        with ExitStack() as stack:
            # The server starts 0.3 s after the first refused connection; the retry lands.
            late = threading.Timer(0.3, lambda: stack.enter_context(serve_in_thread(openai_server[1].app, port=port)))
            late.start()
            async with http:
                events = await collect(chat)
            late.join()
        assert any(isinstance(e, TextDelta) for e in events)


class TestToolCalls:
    async def test_fragments_are_assembled(self):
        from starlette.applications import Starlette
        from starlette.responses import StreamingResponse
        from starlette.routing import Route

        def chunk(delta, finish=None):
            return "data: " + json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"

        async def tool_stream(_request):
            async def body():
                yield chunk(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "crop", "arguments": ""},
                            }
                        ],
                    }
                )
                yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"image": "img_0", '}}]})
                yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"box": [0, 0, 0.5, 0.5]}'}}]})
                yield chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 1,
                                "id": "call_2",
                                "type": "function",
                                "function": {"name": "web_search", "arguments": "{not json"},
                            }
                        ]
                    }
                )
                yield chunk({}, finish="tool_calls")
                yield "data: [DONE]\n\n"

            return StreamingResponse(body(), media_type="text/event-stream")

        app = Starlette(routes=[Route("/v1/chat/completions", tool_stream, methods=["POST"])])
        with serve_in_thread(app) as url:
            http, chat = chat_model(url + "/v1", "tool-model")
            tools = [ToolSpec("crop", "Crop an image", {"type": "object", "properties": {}})]
            async with http:
                events = await collect(chat, tools=tools)
        calls = [e for e in events if isinstance(e, ToolCall)]
        assert calls[0] == ToolCall(
            "call_1", "crop", {"image": "img_0", "box": [0, 0, 0.5, 0.5]}, '{"image": "img_0", "box": [0, 0, 0.5, 0.5]}'
        )
        assert calls[1].name == "web_search" and calls[1].arguments == {} and calls[1].raw_arguments == "{not json"

    async def test_tool_messages_are_sent_in_openai_shape(self, openai_server):
        base_url, server = openai_server
        http, chat = chat_model(base_url, "echo-x")
        call = ToolCall("call_9", "crop", {"image": "img_0"})
        messages = [
            ChatMessage(role="system", content="You are a geolocator."),
            ChatMessage(role="user", content="Where?", images=(IMAGE,)),
            ChatMessage(role="assistant", content="", tool_calls=(call,)),
            ChatMessage(role="tool", content="cropped: img_1", tool_call_id="call_9", name="crop", images=(IMAGE,)),
        ]
        async with http:
            await collect(chat, messages, tools=[ToolSpec("crop", "Crop", {"type": "object"})])
        sent = server.requests[-1]["messages"]
        assert sent[2] == {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_9", "type": "function", "function": {"name": "crop", "arguments": '{"image": "img_0"}'}}
            ],
        }
        assert sent[3] == {"role": "tool", "tool_call_id": "call_9", "content": "cropped: img_1"}
        assert sent[4]["role"] == "user" and sent[4]["content"][1]["type"] == "image_url"
        assert server.requests[-1]["tools"][0]["function"]["name"] == "crop"


class TestReasoningModels:
    async def test_options_send_max_completion_tokens_and_no_temperature(self, openai_server, tmp_path):
        base_url, server = openai_server
        cfg = ContenderConfig(
            name="o",
            provider="openai",
            base_url=base_url,
            model="echo-o",
            max_tokens=500,
            options={"max_tokens_field": "max_completion_tokens", "send_temperature": False},
        )
        async with httpx.AsyncClient() as http:
            await collect(
                build_openai(cfg, ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=PoolConfig()))
            )
        body = server.requests[-1]
        assert body["max_completion_tokens"] == 500
        assert "max_tokens" not in body and "temperature" not in body
