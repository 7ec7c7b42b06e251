"""GATE over Anthropic's native tool use, through the real Messages client and
its loopback server: tool results and produced images travel back in the
API's own shape."""

from __future__ import annotations

from typing import Any

import httpx

from arena.config import GateSettings
from arena.contenders.base import ContenderImage, TextDelta, ToolStep
from arena.contenders.gate.agent import GateContender
from arena.contenders.gate.tools.image import image_tools
from tests.contenders.apis.test_anthropic import (
    Loopback,
    claude,
    message,
    sse,
    text_block,
    tool_block,
)


class TestGateOverAnthropic:
    async def test_tool_use_round_trip(
        self, server: Loopback, http: httpx.AsyncClient, street_jpeg: ContenderImage
    ) -> None:
        server.scripts += [
            sse(
                message(
                    text_block(0, "Zoom on the car."),
                    tool_block(1, "toolu_01", "crop", '{"box": [0.5,', " 0.5, 1, 1]}"),
                )
            ),
            sse(message(text_block(0, "Final answer: ", "Tokyo, Japan."))),
        ]
        agent = GateContender("claude+gate", claude(http, server.url), image_tools(), GateSettings())
        events: list[Any] = [e async for e in agent.stream("Where was this taken?", street_jpeg)]
        steps = [e for e in events if isinstance(e, ToolStep)]
        assert [(s.tool, s.ok, s.thought) for s in steps] == [("crop", True, "Zoom on the car.")]
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Tokyo, Japan."
        first, second = (r.body for r in server.received)
        assert {t["name"] for t in first["tools"]} >= {"crop", "super_resolution", "pixel_analysis"}
        assistant, reply = second["messages"][-2:]
        assert assistant["role"] == "assistant"
        assert assistant["content"][-1] == {"type": "tool_use", "id": "toolu_01", "name": "crop",
                                            "input": {"box": [0.5, 0.5, 1, 1]}}  # fmt: skip
        # the tool result and the produced image share one user turn, as the API wants
        assert reply["role"] == "user"
        kinds = [block["type"] for block in reply["content"]]
        assert kinds == ["tool_result", "image", "text"]
        assert reply["content"][0]["tool_use_id"] == "toolu_01"
        assert "img_1 (640x335 px)" in reply["content"][2]["text"]

    async def test_the_last_turn_tells_earlier_calls_in_text_and_offers_no_tools(
        self, server: Loopback, http: httpx.AsyncClient, street_jpeg: ContenderImage
    ) -> None:
        server.scripts += [
            sse(
                message(
                    text_block(0, "Zoom on the car."), tool_block(1, "toolu_01", "crop", '{"box": [0.5, 0.5, 1, 1]}')
                )
            ),
            sse(message(text_block(0, "Final answer: ", "Tokyo, Japan."))),
        ]
        agent = GateContender("claude+gate", claude(http, server.url), image_tools(), GateSettings(max_turns=2))
        events: list[Any] = [e async for e in agent.stream("Where was this taken?", street_jpeg)]
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Tokyo, Japan."
        first, last = (r.body for r in server.received)
        assert "tools" in first and "tools" not in last
        # the Messages API refuses tool_use / tool_result blocks in a request without tools
        kinds = [b["type"] for turn in last["messages"] for b in turn["content"]]
        assert "tool_use" not in kinds and "tool_result" not in kinds
        assert [t["role"] for t in last["messages"]] == ["user", "assistant", "user"]
        assistant, reply = last["messages"][1:]
        assert assistant["content"] == [
            {"type": "text", "text": 'Zoom on the car.\n[called crop with {"box": [0.5, 0.5, 1, 1]}]'}
        ]
        # the result, the image it made with its note, then the order to answer
        assert [b["type"] for b in reply["content"]] == ["text", "image", "text", "text"]
        assert reply["content"][0]["text"].startswith("[result of crop] Produced img_1")
        assert "img_1 (640x335 px)" in reply["content"][2]["text"]
        assert "Do not call any more tools" in reply["content"][3]["text"]
