"""GATE over Gemini's function calling, through the real Gemini client and its
loopback server: the forced last turn offers no tools and carries the earlier
calls as text, since a request without function declarations cannot hold
`functionCall` / `functionResponse` parts."""

from __future__ import annotations

from typing import Any

import httpx

from arena.config import GateSettings
from arena.contenders.base import ContenderImage, TextDelta, ToolStep
from arena.contenders.gate.agent import GateContender
from arena.contenders.gate.tools.image import image_tools
from tests.contenders.apis.test_gemini import Loopback, chunk, gemini, sse

CROP_CALL = {"functionCall": {"name": "crop", "args": {"box": [0.5, 0.5, 1, 1]}}}


class TestGateOverGemini:
    async def test_function_call_round_trip(
        self, server: Loopback, http: httpx.AsyncClient, street_jpeg: ContenderImage
    ) -> None:
        server.scripts += [
            sse([chunk({"text": "Zoom on the car."}, CROP_CALL, finish="STOP")]),
            sse([chunk({"text": "Final answer: Tokyo, Japan."}, finish="STOP")]),
        ]
        agent = GateContender("gemini+gate", gemini(http, server.url), image_tools(), GateSettings())
        events: list[Any] = [e async for e in agent.stream("Where was this taken?", street_jpeg)]
        assert [(s.tool, s.ok) for s in events if isinstance(s, ToolStep)] == [("crop", True)]
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Tokyo, Japan."
        first, second = (r.body for r in server.received)
        assert {d["name"] for d in first["tools"][0]["functionDeclarations"]} >= {"crop", "pixel_analysis"}
        model_turn, reply = second["contents"][-2:]
        assert model_turn["role"] == "model" and model_turn["parts"][-1] == CROP_CALL
        # the result, then the image the crop made
        assert reply["role"] == "user"
        assert "functionResponse" in reply["parts"][0] and reply["parts"][0]["functionResponse"]["name"] == "crop"
        assert any("inline_data" in part for part in reply["parts"][1:])

    async def test_the_last_turn_tells_earlier_calls_in_text_and_offers_no_tools(
        self, server: Loopback, http: httpx.AsyncClient, street_jpeg: ContenderImage
    ) -> None:
        server.scripts += [
            sse([chunk({"text": "Zoom on the car."}, CROP_CALL, finish="STOP")]),
            sse([chunk({"text": "Final answer: Tokyo, Japan."}, finish="STOP")]),
        ]
        agent = GateContender("gemini+gate", gemini(http, server.url), image_tools(), GateSettings(max_turns=2))
        events: list[Any] = [e async for e in agent.stream("Where was this taken?", street_jpeg)]
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Tokyo, Japan."
        first, last = (r.body for r in server.received)
        assert "tools" in first and "tools" not in last
        parts = [part for turn in last["contents"] for part in turn["parts"]]
        assert not [p for p in parts if "functionCall" in p or "functionResponse" in p]
        assert [t["role"] for t in last["contents"]] == ["user", "model", "user"]
        model_turn, reply = last["contents"][1:]
        assert model_turn["parts"] == [{"text": 'Zoom on the car.\n[called crop with {"box": [0.5, 0.5, 1, 1]}]'}]
        texts = [p["text"] for p in reply["parts"] if "text" in p]
        assert texts[0].startswith("[result of crop] Produced img_1")
        assert any("inline_data" in p for p in reply["parts"])
        assert "Do not call any more tools" in texts[-1]
