"""The GATE loop against a loopback OpenAI-compatible server that scripts
tool calls, through the real streaming client; and the JSON-in-text fallback."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.config import GateSettings
from arena.contenders.apis.openai import OpenAIChat
from arena.contenders.base import (
    ChatMessage,
    ContenderError,
    ContenderImage,
    TextDelta,
    ToolCall,
    ToolSpec,
    ToolStep,
    Usage,
)
from arena.contenders.gate.agent import GateContender
from arena.contenders.gate.react_text import AnswerSplitter, parse_action
from arena.contenders.gate.registry import ImageRegistry
from arena.contenders.gate.tools.base import Tool, ToolResult
from arena.contenders.gate.tools.image import image_tools
from arena.contenders.instruction import DEFAULT_INSTRUCTION
from arena.images.store import ImageStore, LocalImageStore
from tests.contenders.gate.scripted_model import Call, ScriptedModelServer, Turn
from tests.servers import serve_in_thread

CROP = Call("crop", json.dumps({"image": "img_0", "box": [0.55, 0.45, 0.9, 0.8]}))


@pytest.fixture
def store(tmp_path: Path) -> ImageStore:
    return LocalImageStore(tmp_path / "images")


class Scripted:
    """Serve a script on loopback and talk to it with the real client."""

    def __init__(self, server: ScriptedModelServer, base_url: str, http: httpx.AsyncClient) -> None:
        self.server = server
        self.base_url = base_url
        self.http = http

    def model(self, *, native: bool = True) -> OpenAIChat:
        return OpenAIChat(http=self.http, base_url=self.base_url + "/v1", model="scripted", supports_tools=native)


@pytest.fixture
def scripted() -> Iterator[Any]:
    servers: list[Any] = []

    def start(turns: list[Turn], forced_answer: str | None = None) -> ScriptedModelServer:
        server = ScriptedModelServer(turns, forced_answer)
        servers.append(server)
        return server

    yield start


async def run(agent: GateContender, image: ContenderImage) -> tuple[list[ToolStep], str, list[Any]]:
    events = [e async for e in agent.stream("Where was this photo taken?", image)]
    steps = [e for e in events if isinstance(e, ToolStep)]
    answer = "".join(e.text for e in events if isinstance(e, TextDelta))
    return steps, answer, events


async def with_server(server: ScriptedModelServer, body: Any) -> Any:
    with serve_in_thread(server.app) as base_url:
        async with httpx.AsyncClient() as http:
            return await body(Scripted(server, base_url, http))


def slow_tool(seconds: float, timeout: float) -> Tool:
    async def run(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
        await asyncio.sleep(seconds)
        return ToolResult("done")

    return Tool(ToolSpec("slow", "sleeps", {"type": "object", "properties": {}}), run, timeout)


def broken_tool() -> Tool:
    async def run(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
        raise RuntimeError("disk on fire")

    return Tool(ToolSpec("broken", "always fails", {"type": "object", "properties": {}}), run)


class TestNativeLoop:
    async def test_crop_then_streamed_answer(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        server = scripted(
            [
                Turn("I should look at the car more closely.", [CROP]),
                Turn("Thought: the plate is Japanese.\nFinal answer: **Tokyo, Japan** — a Japanese plate.", delay=0.01),
            ]
        )

        async def body(s: Scripted) -> Any:
            agent = GateContender("m+gate", s.model(), image_tools(), GateSettings(), store)
            return await run(agent, street_jpeg)

        steps, answer, events = await with_server(server, body)
        assert answer == "**Tokyo, Japan** — a Japanese plate."
        assert len([e for e in events if isinstance(e, TextDelta)]) > 3  # streamed as it came
        [step] = steps
        assert step.tool == "crop" and step.ok and step.thought == "I should look at the car more closely."
        assert step.args == {"image": "img_0", "box": [0.55, 0.45, 0.9, 0.8]}
        assert "img_1 (448x235 px)" in step.observation
        assert store.exists(step.image_refs[0])
        assert events[-1] == Usage(200, 20)  # summed over the two turns
        first, second = server.requests
        assert {t["function"]["name"] for t in first["tools"]} == {
            "crop",
            "rotate",
            "auxiliary_lines",
            "super_resolution",
            "pixel_analysis",
        }
        messages = second["messages"]
        assert messages[2]["tool_calls"][0]["id"] == "call_1_0"
        assert messages[3] == {"role": "tool", "tool_call_id": "call_1_0", "content": step.observation}
        # only the produced image is sent with the step, as a user turn after the tool result
        images = [p for p in messages[4]["content"] if p["type"] == "image_url"]
        assert len(images) == 1 and "img_1" in messages[4]["content"][0]["text"]

    async def test_bad_arguments_and_unknown_tools_are_observations(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        server = scripted(
            [
                Turn("", [Call("crop", '{"box": [0, 0, 640, 300]}')]),  # pixels, not fractions
                Turn("", [Call("crop", '{"box": [0.1, 0.2,')]),  # broken JSON
                Turn("", [Call("crop", '{"box": [0, 0, 1, 1], "zoom": 3}')]),  # unknown argument
                Turn("", [Call("teleport", '{"to": "Tokyo"}')]),
                Turn("", [Call("rotate", '{"image": "img_9", "degrees": 90}')]),  # unknown image id
                Turn("Final answer: Japan."),
            ]
        )

        async def body(s: Scripted) -> Any:
            return await run(GateContender("m+gate", s.model(), image_tools(), GateSettings(), store), street_jpeg)

        steps, answer, _ = await with_server(server, body)
        assert answer == "Japan."
        assert [s.ok for s in steps] == [False] * 5
        assert "fractions of the image between 0 and 1, not pixels" in steps[0].observation
        assert "not a valid JSON object" in steps[1].observation and steps[1].args == {"raw": '{"box": [0.1, 0.2,'}
        assert "unknown argument(s) zoom" in steps[2].observation
        assert "unknown tool 'teleport'" in steps[3].observation and "crop" in steps[3].observation
        assert "unknown image id 'img_9'" in steps[4].observation
        tool_messages = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
        assert len(tool_messages) == 5 and all(m["content"].startswith("Error: ") for m in tool_messages)

    async def test_endless_loop_ends_with_a_forced_answer(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        server = scripted([Turn("Zooming again.", [CROP])], forced_answer="Final answer: somewhere in Japan.")

        async def body(s: Scripted) -> Any:
            agent = GateContender("m+gate", s.model(), image_tools(), GateSettings(max_turns=4), store)
            return await run(agent, street_jpeg)

        steps, answer, _ = await with_server(server, body)
        assert len(steps) == 3 and len(server.requests) == 4
        assert answer == "somewhere in Japan."
        assert "Do not call any more tools" in server.requests[-1]["messages"][-1]["content"]

    async def test_a_model_that_never_answers_fails_clearly(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        server = scripted([Turn("", [CROP])])

        async def body(s: Scripted) -> Any:
            agent = GateContender("m+gate", s.model(), image_tools(), GateSettings(max_turns=3), store)
            return await run(agent, street_jpeg)

        with pytest.raises(ContenderError, match="no final answer after 3 turns and 2 tool calls"):
            await with_server(server, body)

    async def test_the_last_turn_offers_no_tools_and_its_text_is_the_answer(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        # the model still calls a tool on the forced last turn, but also writes text
        server = scripted([Turn("", [CROP]), Turn("", [CROP]), Turn("Probably Osaka, Japan.", [CROP])])

        async def body(s: Scripted) -> Any:
            agent = GateContender("m+gate", s.model(), image_tools(), GateSettings(max_turns=3), store)
            return await run(agent, street_jpeg)

        steps, answer, _ = await with_server(server, body)
        assert [len(r.get("tools", [])) > 0 for r in server.requests] == [True, True, False]
        assert answer == "Probably Osaka, Japan." and len(steps) == 2

    async def test_a_tool_call_alone_on_the_last_turn_fails_without_naming_the_contender(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        server = scripted([Turn("", [CROP]), Turn("", [CROP])])

        async def body(s: Scripted) -> Any:
            agent = GateContender("secret-vision-9+gate", s.model(), image_tools(), GateSettings(max_turns=2), store)
            return await run(agent, street_jpeg)

        with pytest.raises(ContenderError) as failure:
            await with_server(server, body)
        message = failure.value.message
        assert "tools" not in server.requests[-1] and "tools" in server.requests[0]
        assert message == (
            "The model called a tool where none is offered and gave no final answer after 2 turns and 1 tool calls."
        )
        assert "secret" not in message.lower() and "gate" not in message.lower()

    async def test_tool_timeout_and_exception_are_recoverable(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        server = scripted(
            [Turn("", [Call("slow", "{}")]), Turn("", [Call("broken", "{}")]), Turn("Final answer: Osaka.")]
        )

        async def body(s: Scripted) -> Any:
            tools = [slow_tool(30, timeout=1.0), broken_tool()]
            agent = GateContender("m+gate", s.model(), tools, GateSettings(), store)
            started = time.monotonic()
            result = await run(agent, street_jpeg)
            return result, time.monotonic() - started

        (steps, answer, _), elapsed = await with_server(server, body)
        assert answer == "Osaka."
        assert not steps[0].ok and "did not finish within 1 s" in steps[0].observation
        assert not steps[1].ok and "RuntimeError: disk on fire" in steps[1].observation
        assert elapsed < 10

    async def test_time_budget_forces_the_answer(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        server = scripted([Turn("", [Call("slow", "{}")])], forced_answer="Final answer: out of time, Japan.")

        async def body(s: Scripted) -> Any:
            settings = GateSettings(time_budget=3.0, final_reserve=1.0)
            agent = GateContender("m+gate", s.model(), [slow_tool(0.8, timeout=5)], settings, store)
            started = time.monotonic()
            result = await run(agent, street_jpeg)
            return result, time.monotonic() - started

        (steps, answer, _), elapsed = await with_server(server, body)
        assert answer == "out of time, Japan."
        assert 1 <= len(steps) <= 3 and elapsed < 4.5
        assert "time budget" in server.requests[-1]["messages"][-1]["content"]


def request_images(body: dict[str, Any]) -> list[str]:
    """The data URLs of every image a chat request carries."""
    return [
        part["image_url"]["url"]
        for message in body["messages"]
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


def crops(n: int) -> Turn:
    """Two crops of the photo, of one size, elsewhere on every turn."""
    x = 0.05 * n
    boxes = [[x, 0, x + 0.5, 0.5], [0.5 - x, 0.5, 1 - x, 1]]
    return Turn(f"Turn {n}: closer.", [Call("crop", json.dumps({"image": "img_0", "box": b})) for b in boxes])


class TestBoundedContext:
    async def test_each_image_is_sent_once_and_turn_nine_costs_what_turn_two_does(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        server = scripted([*(crops(n) for n in range(1, 10)), Turn("Final answer: Japan.")])

        async def body(s: Scripted) -> Any:
            agent = GateContender("m+gate", s.model(), image_tools(), GateSettings(max_turns=10), store)
            return await run(agent, street_jpeg)

        steps, answer, _ = await with_server(server, body)
        assert answer == "Japan." and len(steps) == 18
        sizes = [len(json.dumps(r)) for r in server.requests]
        images = [request_images(r) for r in server.requests]
        # the photo, then the photo and the two crops the last step made: never more
        assert [len(i) for i in images] == [1] + [3] * 9
        assert all(i[0] == street_jpeg.data_url() for i in images)
        sent = [url for i in images[1:] for url in i[1:]]
        assert len(sent) == len(set(sent)) == 18  # each crop once
        # turn 9 carries eight more turns of text than turn 2, and no more pixels
        assert sizes[8] < sizes[1] * 1.05, sizes
        # earlier images stay known by id and note
        ninth = json.dumps(server.requests[8]["messages"])
        assert "img_1 (" in ninth and "img_16 (" in ninth and "shown to you once" in ninth

    async def test_an_earlier_image_the_model_names_is_shown_again_once(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        server = scripted(
            [
                crops(1),
                Turn("Compare img_2 with a new crop.", [CROP]),
                Turn("Final answer: Japan."),
            ]
        )

        async def body(s: Scripted) -> Any:
            agent = GateContender("m+gate", s.model(), image_tools(), GateSettings(), store)
            return await run(agent, street_jpeg)

        await with_server(server, body)
        first, second, third = (request_images(r) for r in server.requests)
        assert len(second) == 3 and len(third) == 3  # photo + new img_3 + img_2 again
        assert third[2] == second[2]  # img_2, as it was first sent
        assert third[1] not in second  # img_3 is new
        note = server.requests[2]["messages"][-1]["content"][0]["text"]
        assert "Images produced by the tools:\n- img_3" in note and "Shown again, as you named them:\n- img_2" in note


class TestTextFallback:
    async def test_action_in_text_runs_the_tool(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        server = scripted(
            [
                Turn(
                    "Thought: zoom on the car.\n"
                    'Action: {"tool": "super_resolution", "arguments": {"box": [0.6, 0.5, 0.9, 0.8], "factor": 2}}'
                ),
                Turn("Action: {not json}"),
                Turn("Final answer: Shinjuku, Tokyo."),
            ]
        )

        async def body(s: Scripted) -> Any:
            return await run(
                GateContender("m+gate", s.model(native=False), image_tools(), GateSettings(), store), street_jpeg
            )

        steps, answer, _ = await with_server(server, body)
        assert answer == "Shinjuku, Tokyo."
        assert steps[0].tool == "super_resolution" and steps[0].ok and steps[0].thought == "zoom on the car."
        assert "img_1 (768x402 px)" in steps[0].observation
        assert not steps[1].ok and "not valid JSON" in steps[1].observation
        first, second, third = server.requests
        assert "tools" not in first and '"crop"' not in first["messages"][0]["content"]
        assert "- crop:" in first["messages"][0]["content"] and "Action:" in first["messages"][0]["content"]
        observation = second["messages"][-1]
        assert observation["role"] == "user" and observation["content"][0]["text"].startswith(
            "Observation: Produced img_1"
        )
        assert [p["type"] for p in observation["content"]] == ["text", "image_url"]
        assert third["messages"][-1]["content"].startswith("Observation: Error: the Action is not valid JSON")

    @pytest.mark.parametrize(
        ("last", "expected"),
        [
            ('Thought: the plate settles it.\nAction: {"tool": "crop", "arguments": {"box": [0, 0, 1, 1]}}',
             "the plate settles it."),
            ('Final answer: Osaka, Japan.\n\nAction: {"tool": "crop", "arguments": {"box": [0, 0, 1, 1]}}',
             "Osaka, Japan."),
            ("Final answer: Osaka, Japan: the plates are Japanese.", "Osaka, Japan: the plates are Japanese."),
        ],
    )  # fmt: skip
    async def test_an_action_on_the_last_turn_is_no_part_of_the_answer(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore, last: str, expected: str
    ) -> None:
        first = 'Action: {"tool": "crop", "arguments": {"box": [0.5, 0.5, 1, 1]}}'
        server = scripted([Turn(first), Turn(last)])

        async def body(s: Scripted) -> Any:
            settings = GateSettings(max_turns=2)
            return await run(
                GateContender("m+gate", s.model(native=False), image_tools(), settings, store), street_jpeg
            )

        steps, answer, _ = await with_server(server, body)
        assert [s.tool for s in steps] == ["crop"]
        assert answer == expected and "Action" not in answer

    async def test_an_action_alone_on_the_last_turn_fails_without_naming_the_contender(
        self, scripted: Any, street_jpeg: ContenderImage, store: ImageStore
    ) -> None:
        action = 'Action: {"tool": "crop", "arguments": {"box": [0.5, 0.5, 1, 1]}}'
        server = scripted([Turn(action), Turn(action)])

        async def body(s: Scripted) -> Any:
            agent = GateContender(
                "secret-9+gate", s.model(native=False), image_tools(), GateSettings(max_turns=2), store
            )
            return await run(agent, street_jpeg)

        with pytest.raises(ContenderError) as failure:
            await with_server(server, body)
        assert failure.value.message == (
            "The model called a tool where none is offered and gave no final answer after 2 turns and 1 tool calls."
        )

    def test_parse_action_variants(self) -> None:
        thought, call, error = parse_action(
            'Thought: hm\n**Action:** ```json\n{"name": "crop", "args": {"box": [0,0,1,1]}}\n```'
        )
        assert thought == "Thought: hm" and call is not None and call.name == "crop" and not error
        assert call.arguments == {"box": [0, 0, 1, 1]}
        assert parse_action("no action here") == ("no action here", None, "")
        assert parse_action('Action: {"tool": "crop", "arguments": [1]}')[2] == '"arguments" must be a JSON object'


class TestAnswerSplitter:
    def test_marker_split_across_chunks_then_live(self) -> None:
        s = AnswerSplitter(final=False, fallback=False)
        assert s.feed("I think.\nFinal ans") == []
        assert s.feed("wer: Kyo") == ["Kyo"]
        assert s.feed("to") == ["to"]
        assert s.finish() == []

    def test_a_marker_inside_a_sentence_does_not_start_the_answer(self) -> None:
        s = AnswerSplitter(final=False, fallback=False)
        assert s.feed("Before the final answer: let me crop the sign.") == []
        assert s.finish() == ["let me crop the sign."]  # no tool call came: the turn was the answer

    def test_thought_before_a_call_is_never_emitted(self) -> None:
        s = AnswerSplitter(final=False, fallback=True)
        assert s.feed('Thought: maybe. Action: {"tool": "crop"} Final answer: x') == []

    def test_final_turn_streams_everything(self) -> None:
        s = AnswerSplitter(final=True, fallback=False)
        assert s.feed("Short") == []
        assert s.feed(" but now long enough to be streamed straight") == [
            "Short but now long enough to be streamed straight"
        ]

    def test_a_long_streamed_thought_costs_linear_time(self) -> None:
        # Each delta searched the whole text held so far for both markers: 6,000 deltas of a
        # long thought blocked the event loop for about half a minute.
        s = AnswerSplitter(final=False, fallback=True)
        started = time.perf_counter()
        for i in range(6_000):
            assert s.feed(f"the sign {i} reads a street name in Latin script near a river ") == []
        assert time.perf_counter() - started < 2.0
        assert s.feed("\nFinal answer: Lyon") == ["Lyon"]

    def test_an_early_action_still_holds_back_a_much_later_marker(self) -> None:
        s = AnswerSplitter(final=False, fallback=True)
        assert s.feed('Thought: zoom.\nAction: {"tool": "crop", "arguments": {"note": "') == []
        assert s.feed("x" * 5000) == []
        assert s.feed('"}}\nFinal answer: Lyon') == []

    def test_a_held_back_marker_keeps_a_final_turn_held_however_long_it_goes_on(self) -> None:
        s = AnswerSplitter(final=True, fallback=True)
        assert s.feed('Action: {"tool": "crop"}\nFinal answer: Lyon, on the Rhône.') == []
        for _ in range(20):
            assert s.feed(" The signs are French and the bridge is typical of the city.") == []
        assert s.finish()[0].startswith("Lyon, on the Rhône.")


class ScriptedChat:
    """A chat model in process, for what needs no HTTP."""

    supports_tools = True

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = turns

    async def chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = ()) -> AsyncIterator[Any]:
        for event in self.turns.pop(0):
            yield event


class TestWithoutTools:
    async def test_no_tools_means_one_direct_turn(self, street_jpeg: ContenderImage) -> None:
        model = ScriptedChat([[TextDelta("Probably Japan, from the road markings.")]])
        steps, answer, _ = await run(GateContender("m+gate", model, [], GateSettings()), street_jpeg)
        assert steps == [] and answer == "Probably Japan, from the road markings."

    async def test_answer_without_marker_is_still_the_answer(self, street_jpeg: ContenderImage) -> None:
        model = ScriptedChat([[ToolCall("a", "pixel_analysis", {})], [TextDelta("Japan.")]])
        steps, answer, _ = await run(GateContender("m+gate", model, image_tools(), GateSettings()), street_jpeg)
        assert steps[0].ok and "vegetation" in steps[0].observation and answer == "Japan."


class TestSystemPrompt:
    async def test_it_follows_the_papers_method_and_lets_the_question_shape_the_answer(
        self, scripted: Any, street_jpeg: ContenderImage
    ) -> None:
        server = scripted([Turn("Final answer: Japan.")])

        async def body(s: Scripted) -> Any:
            settings = GateSettings(max_turns=7, time_budget=90)
            # as the pool composes it: GATE's method, then the arena instruction every contender shares
            agent = GateContender("m+gate", s.model(), image_tools(), settings, system_prompt=DEFAULT_INSTRUCTION)
            return await run(agent, street_jpeg)

        await with_server(server, body)
        system = server.requests[0]["messages"][0]["content"]
        for step in (
            "Break the question into the parts it needs",  # decompose
            "Describe the photo in detail before you guess",
            "Search from the evidence",
            "Prefer official, primary and reference sources",
            "second, independent source",  # cross-check
            "at most 7 turns and about 90 seconds, so plan your steps and finish within them",
            "the most likely answer, then say what remains uncertain",
            "in the shape it asks for",
            "the name, date, number or language when it asks for one",
        ):
            assert step in system, step
        assert "the most likely location" not in system  # no location-shaped answer forced on every question
