"""The Gemini client against a loopback server that speaks the real
`streamGenerateContent?alt=sse` format: `data:` chunks of
GenerateContentResponse JSON separated by CRLF, `{"error": {code, message,
status}}` bodies, a stall, a connection cut mid-chunk."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from arena.config import ContenderConfig, PoolConfig
from arena.contenders.apis.gemini import GeminiChat, build_gemini
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


def sse(chunks: list[Any], *, then: str = "end", pause: float = 0.0) -> Script:
    """Send each chunk as `data: <json>\\r\\n\\r\\n` (Gemini separates events
    with CRLF); `then` = "end", "stall" or "cut" (drop mid-chunk)."""

    async def run(writer: asyncio.StreamWriter) -> None:
        writer.write(_head(200, "text/event-stream"))
        for chunk in chunks:
            text = chunk if isinstance(chunk, str) else json.dumps(chunk)
            writer.write(_chunk(f"data: {text}\r\n\r\n".encode()))
            await writer.drain()
            if pause:
                await asyncio.sleep(pause)
        if then == "stall":
            await asyncio.sleep(30)
        elif then == "cut":
            writer.write(b'200\r\ndata: {"candidates": [{"content"')
            await writer.drain()
        else:
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    return run


def chunk(*parts: dict[str, Any], finish: str | None = None, usage: bool = False) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-test"}
    if usage:
        out["usageMetadata"] = {"promptTokenCount": 1290, "candidatesTokenCount": 31,
                                "thoughtsTokenCount": 7, "totalTokenCount": 1328}  # fmt: skip
    return out


def gemini(http: httpx.AsyncClient, url: str, limits: GenerationLimits = FAST) -> GeminiChat:
    return GeminiChat(http=http, model="gemini-test", base_url=url, limits=limits, api_key="AIza-test")


async def collect(chat: GeminiChat, messages: list[ChatMessage], tools: tuple[ToolSpec, ...] = ()) -> list[Any]:
    return [event async for event in chat.chat(messages, tools)]


ASK = [
    ChatMessage(role="system", content="Answer like a geographer."),
    ChatMessage(role="user", content="Where was this taken?", images=(IMAGE,)),
]
CROP = ToolSpec(
    name="crop",
    description="Crop a region of the image.",
    parameters={"type": "object", "additionalProperties": False, "$schema": "x",
                "properties": {"box": {"type": "array", "items": {"type": "number"}, "description": "x0,y0,x1,y1"}},
                "required": ["box"]},
)  # fmt: skip


# -- tests ---------------------------------------------------------------------------


class TestGeminiStreaming:
    async def test_streams_text_and_usage(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse([
            chunk({"text": "Thinking about the tiles...", "thought": True}),
            chunk({"text": "Probably "}),
            chunk({"text": "Porto, Portugal."}, finish="STOP", usage=True),
        ]))  # fmt: skip
        events = await collect(gemini(http, server.url), ASK)
        assert [e.text for e in events if isinstance(e, TextDelta)] == ["Probably ", "Porto, Portugal."]
        assert events[-1] == Usage(input_tokens=1290, output_tokens=38)

    async def test_sends_the_generate_content_request(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse([chunk({"text": "ok"}, finish="STOP")]))
        await collect(gemini(http, server.url), ASK)
        sent = server.received[0]
        assert sent.target == "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
        assert sent.headers["x-goog-api-key"] == "AIza-test"
        assert sent.header_names.count("content-type") == 1  # the provider's own, not a second one
        body = sent.body
        assert body["systemInstruction"] == {"parts": [{"text": "Answer like a geographer."}]}
        assert body["generationConfig"] == {"maxOutputTokens": 300, "temperature": 0.2}
        assert body["contents"] == [{"role": "user", "parts": [
            {"inline_data": {"mime_type": "image/jpeg", "data": IMAGE.base64()}},
            {"text": "Where was this taken?"},
        ]}]  # fmt: skip

    async def test_builder_reads_the_contender_config(
        self, server: Loopback, http: httpx.AsyncClient, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("TEST_GEMINI_KEY", "AIza-env")
        cfg = ContenderConfig(
            name="gemini", provider="gemini", model="models/gemini-x", base_url=server.url,
            api_key_env="TEST_GEMINI_KEY", max_tokens=64, temperature=1.0, timeout=3,
            options={"api_version": "v1", "generation_config": {"thinkingConfig": {"thinkingBudget": 0}}},
        )  # fmt: skip
        deps = ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=PoolConfig(contenders=[cfg]))
        server.scripts.append(sse([chunk({"text": "ok"}, finish="STOP")]))
        await collect(build_gemini(cfg, deps), ASK)
        sent = server.received[0]
        assert sent.target.startswith("/v1/models/gemini-x:streamGenerateContent")
        assert sent.headers["x-goog-api-key"] == "AIza-env"
        assert sent.body["generationConfig"] == {
            "maxOutputTokens": 64, "temperature": 1.0, "thinkingConfig": {"thinkingBudget": 0}}  # fmt: skip

    async def test_safety_block_is_an_error(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse([{"promptFeedback": {"blockReason": "SAFETY"}}]))
        with pytest.raises(ContenderError, match="refused to answer this prompt .blocked: SAFETY"):
            await collect(gemini(http, server.url), ASK)

    async def test_withheld_answer_is_an_error(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse([chunk(finish="RECITATION")]))
        with pytest.raises(ContenderError, match="withheld the answer .finish reason RECITATION"):
            await collect(gemini(http, server.url), ASK)


class TestGeminiTools:
    async def test_function_calls_become_tool_calls(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse([
            chunk({"text": "Zooming in."}),
            chunk({"functionCall": {"name": "crop", "args": {"box": [0.1, 0.2, 0.5, 0.6]}},
                   "thoughtSignature": "c2lnLTE="},
                  {"functionCall": {"id": "fc-7", "name": "search", "args": {"q": "Ribeira"}}},
                  finish="STOP", usage=True),
        ]))  # fmt: skip
        chat = gemini(http, server.url)
        events = await collect(chat, ASK, (CROP,))
        calls = [e for e in events if isinstance(e, ToolCall)]
        assert [(c.name, c.arguments) for c in calls] == [
            ("crop", {"box": [0.1, 0.2, 0.5, 0.6]}), ("search", {"q": "Ribeira"})]  # fmt: skip
        assert calls[1].id == "fc-7" and calls[0].id and calls[0].id != calls[1].id
        declared = server.received[0].body["tools"][0]["functionDeclarations"][0]
        assert declared["name"] == "crop"
        assert declared["parameters"] == {  # keys Gemini rejects are dropped
            "type": "object", "required": ["box"],
            "properties": {"box": {"type": "array", "items": {"type": "number"}, "description": "x0,y0,x1,y1"}},
        }  # fmt: skip

        # The next turn carries the calls back (with the thought signature and
        # only the API's own ids) and the tool results as functionResponse parts.
        crop_image = ContenderImage(jpeg=b"\xff\xd8crop\xff\xd9", width=2, height=2)
        history = [
            *ASK,
            ChatMessage(role="assistant", content="Zooming in.", tool_calls=tuple(calls)),
            ChatMessage(role="tool", content="cropped", images=(crop_image,), tool_call_id=calls[0].id, name="crop"),
            ChatMessage(role="tool", content="2 results", tool_call_id="fc-7", name="search"),
        ]  # fmt: skip
        server.scripts.append(sse([chunk({"text": "Porto."}, finish="STOP")]))
        await collect(chat, history, (CROP,))
        contents = server.received[1].body["contents"]
        assert [c["role"] for c in contents] == ["user", "model", "user"]
        assert contents[1]["parts"] == [
            {"text": "Zooming in."},
            {"functionCall": {"name": "crop", "args": {"box": [0.1, 0.2, 0.5, 0.6]}}, "thoughtSignature": "c2lnLTE="},
            {"functionCall": {"name": "search", "args": {"q": "Ribeira"}, "id": "fc-7"}},
        ]
        assert contents[2]["parts"] == [
            {"functionResponse": {"name": "crop", "response": {"content": "cropped"}}},
            {"inline_data": {"mime_type": "image/jpeg", "data": crop_image.base64()}},
            {"functionResponse": {"name": "search", "response": {"content": "2 results"}, "id": "fc-7"}},
        ]

    async def test_enums_of_numbers_are_sent_as_strings(self, server: Loopback, http: httpx.AsyncClient) -> None:
        # The API's Schema.enum is a list of strings: [2, 4] is a 400 (INVALID_ARGUMENT) for
        # every request offering the tool, so a GATE contender on Gemini could never answer.
        from arena.contenders.gate.tools.image import image_tools

        specs = tuple(t.spec for t in image_tools())
        server.scripts.append(sse([chunk({"text": "ok"}, finish="STOP")]))
        await collect(gemini(http, server.url), ASK, specs)
        declared = {d["name"]: d for d in server.received[0].body["tools"][0]["functionDeclarations"]}
        factor = declared["super_resolution"]["parameters"]["properties"]["factor"]
        assert factor["type"] == "integer" and factor["enum"] == ["2", "4"]
        colour = declared["auxiliary_lines"]["parameters"]["properties"]["color"]
        assert colour["enum"] == ["red", "yellow", "cyan", "magenta", "white", "black"]

        def enums(node: Any) -> list[Any]:
            if isinstance(node, dict):
                return [*node.get("enum", []), *(v for value in node.values() for v in enums(value))]
            if isinstance(node, list):
                return [v for item in node for v in enums(item)]
            return []

        assert all(isinstance(v, str) for v in enums(list(declared.values())))


class TestGeminiErrors:
    @pytest.mark.parametrize(
        ("status", "code", "words"),
        [
            (400, "INVALID_ARGUMENT", "HTTP 400 (bad request)"),
            (401, "UNAUTHENTICATED", "HTTP 401 (unauthorised: check the API key)"),
            (429, "RESOURCE_EXHAUSTED", "HTTP 429 (rate limited)"),
            (500, "INTERNAL", "HTTP 500 (server error)"),
            (503, "UNAVAILABLE", "HTTP 503 (unavailable)"),
        ],
    )
    async def test_http_errors_carry_the_api_message(
        self, server: Loopback, http: httpx.AsyncClient, status: int, code: str, words: str
    ) -> None:
        payload = {"error": {"code": status, "message": f"details {status}", "status": code}}
        server.scripts.append(error(status, [payload] if status == 429 else payload))
        with pytest.raises(ContenderError) as caught:
            await collect(gemini(http, server.url), ASK)
        assert caught.value.message == f"The model API: {words}: details {status}"
        assert caught.value.retryable == (status >= 429)
        assert len(server.received) == 1

    async def test_error_chunk_mid_stream(self, server: Loopback, http: httpx.AsyncClient) -> None:
        overloaded = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
        server.scripts.append(sse([chunk({"text": "Porto or"}), overloaded]))
        with pytest.raises(ContenderError, match="error mid-answer: UNAVAILABLE: The model is overloaded."):
            await collect(gemini(http, server.url), ASK)

    async def test_malformed_event(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse([chunk({"text": "Porto"}), '{"candidates": [', chunk(finish="STOP")]))
        with pytest.raises(ContenderError, match="malformed chunk"):
            await collect(gemini(http, server.url), ASK)

    @pytest.mark.parametrize(
        "bad",
        [
            {"candidates": ["text"]},
            {"candidates": [{"content": {"parts": [7]}}]},
            {"candidates": [], "usageMetadata": "lots"},
        ],
    )
    async def test_valid_json_of_the_wrong_shape(
        self, server: Loopback, http: httpx.AsyncClient, bad: dict[str, Any]
    ) -> None:
        server.scripts.append(sse([chunk({"text": "Porto"}), bad, chunk(finish="STOP")]))
        with pytest.raises(ContenderError, match="malformed chunk"):
            await collect(gemini(http, server.url), ASK)

    async def test_stall_is_cut_short(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse([chunk({"text": "Por"})], then="stall"))
        started = time.monotonic()
        with pytest.raises(ContenderError, match="stalled"):
            await collect(gemini(http, server.url), ASK)
        assert time.monotonic() - started < 3

    async def test_connection_cut_mid_stream(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse([chunk({"text": "Por"})], then="cut"))
        with pytest.raises(ContenderError, match="broke off the stream mid-answer"):
            await collect(gemini(http, server.url), ASK)

    async def test_stream_without_finish_reason(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse([chunk({"text": "Porto"}), chunk({"text": ", Portu"})]))
        with pytest.raises(ContenderError, match="ended before the answer was complete"):
            await collect(gemini(http, server.url), ASK)

    async def test_total_timeout(self, server: Loopback, http: httpx.AsyncClient) -> None:
        server.scripts.append(sse([chunk({"text": "."})] * 40, pause=0.05))
        limits = GenerationLimits(timeout=0.6, stall_timeout=0.4, connect_retries=0)
        with pytest.raises(ContenderError, match="took longer than"):
            await collect(gemini(http, server.url, limits), ASK)

    async def test_missing_key_is_a_clear_error(self, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
        chat = GeminiChat(http=http, model="m", base_url="http://127.0.0.1:9", api_key_env="NO_SUCH_KEY_VAR")
        with pytest.raises(ContenderError, match="NO_SUCH_KEY_VAR"):
            await collect(chat, ASK)
