"""`policy = "fixed"`: GeoBrowse's fixed tool steps for any chat model, then
one answer from the evidence. A scripted loopback model (OpenAI wire format)
answers; a loopback SearxNG serves text search, TinEye-style reverse image
search (fetching each view from a loopback arena image route) and the pages
the policy visits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.config import GateSettings, load_pool
from arena.contenders.apis.openai import OpenAIChat
from arena.contenders.base import ContenderError, ContenderImage, TextDelta, ToolStep, Usage
from arena.contenders.compose import ProviderDeps, build_pool
from arena.contenders.gate import FixedPolicyContender
from arena.contenders.gate.fixed import asks_beyond_the_place, next_link_query
from arena.contenders.gate.toolbox import build_toolbox
from arena.images.store import LocalImageStore
from tests.contenders.gate.reverse_servers import ReverseEngine, arena_images
from tests.contenders.gate.scripted_model import ScriptedModelServer, Turn
from tests.servers import serve_in_thread

SAMPLE = Path("/work/shared/data/geobrowse-sample")
LEVEL_1 = "Based on the details in this photo, can you infer where this photo was taken in?"
LEVEL_2 = (
    "Based on the details in this photo, deduce which country this photo was taken in. An emperor of this "
    "country suffered from a brain disease in his childhood and participated in a world war. His son was the "
    "longest-reigning emperor of this country and died in a certain year. What was the consumption tax rate of "
    "this country in that year?"
)


class World:
    """The loopback servers one run needs, and the clients to reach them."""

    def __init__(self, tmp_path: Path, answer: str) -> None:
        self.store = LocalImageStore(tmp_path / "images")
        self.engine = ReverseEngine()
        self.model_server = ScriptedModelServer([Turn(answer)])
        self.tmp_path = tmp_path

    def contender(self, http: httpx.AsyncClient, **tools: Any) -> FixedPolicyContender:
        settings = GateSettings.from_pool({
            "code": False,
            "search_backend": "searxng",
            "search_url": self.engine.base_url,
            "reverse_search_backend": "searxng",
            **tools,
        })  # fmt: skip
        # allow_loopback: the visited pages are on this machine
        box = build_toolbox(settings, http, public_url=self.arena_url, allow_loopback=True)
        model = OpenAIChat(http=http, base_url=self.model_url + "/v1", model="scripted")
        return FixedPolicyContender("m+fixed", model, box.tools, settings, self.store, "Answer briefly.", box.disabled)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[Any]:
    def start(answer: str = "Shibuya, Tokyo, Japan.") -> World:
        w = World(tmp_path, answer)
        return w

    yield start


async def run_fixed(
    w: World, prompt: str, image: ContenderImage, **tools: Any
) -> tuple[list[ToolStep], str, list[Any]]:
    with (
        serve_in_thread(arena_images(w.store)) as arena,
        serve_in_thread(w.engine.app) as engine,
        serve_in_thread(w.model_server.app) as model,
    ):
        w.arena_url, w.model_url, w.engine.base_url = arena, model, engine
        async with httpx.AsyncClient() as http:
            events = [e async for e in w.contender(http, **tools).stream(prompt, image)]
    steps = [e for e in events if isinstance(e, ToolStep)]
    return steps, "".join(e.text for e in events if isinstance(e, TextDelta)), events


def images_of(body: dict[str, Any]) -> int:
    return sum(
        1 for m in body["messages"] if isinstance(m["content"], list) for p in m["content"] if p["type"] == "image_url"
    )


class TestFixedPolicy:
    async def test_level_1_runs_the_papers_steps_in_order_then_answers(
        self, world: Any, street_jpeg: ContenderImage
    ) -> None:
        w = world()
        steps, answer, events = await run_fixed(w, LEVEL_1, street_jpeg)
        tools = [s.tool for s in steps]
        # ten crops (five at 0.8, five at 0.6), each 2x; this photo is level, so no rotation
        assert tools[:10] == ["super_resolution"] * 10
        assert [s.args["scale"] for s in steps[:10]] == [0.8] * 5 + [0.6] * 5
        assert all(s.args["factor"] == 2 and s.image_refs for s in steps[:10])
        # image search on the seven views in order: full view, the five 0.8 crops, the 0.6 centre
        assert tools[10:17] == ["reverse_image_search"] * 7
        assert [s.args["image"] for s in steps[10:17]] == [
            "img_0",
            "img_1",
            "img_2",
            "img_3",
            "img_4",
            "img_5",
            "img_10",
        ]
        assert len(w.engine.fetched) == 7 and w.engine.fetched[0][1] == (street_jpeg.width, street_jpeg.height)
        assert w.engine.fetched[1][1] == (2048, 1074)  # the 0.8 crop enlarged 2x, as searched
        # a text search from what the image search found, then the first three unique pages
        assert tools[17:] == ["web_search", "visit", "visit", "visit"]
        assert steps[17].args["query"].startswith("Shibuya crossing (")
        assert w.engine.visited == ["1", "2", "3"]
        assert all(s.ok for s in steps)
        # the model answers once, without tools, from the photo, the six other searched views and the evidence
        [request] = w.model_server.requests
        assert "tools" not in request and images_of(request) == 7
        system, user = request["messages"]
        assert "Answer briefly." in system["content"] and "cannot call tools now" in system["content"]
        text = user["content"][0]["text"]
        assert text.startswith(LEVEL_1) and "Reverse image search with img_10:\n1. Shibuya crossing" in text
        assert "Visit of " in text and "Page 3 says the crossing is in Shibuya" in text
        assert answer == "Shibuya, Tokyo, Japan." and isinstance(events[-1], Usage)

    async def test_level_2_adds_one_search_for_the_next_link(self, world: Any, street_jpeg: ContenderImage) -> None:
        w = world("Final answer: Japan; the tax was 3% in 1989.")
        steps, answer, _ = await run_fixed(w, LEVEL_2, street_jpeg)
        tools = [s.tool for s in steps]
        assert tools[17:] == ["web_search", "visit", "visit", "visit", "web_search"]
        assert steps[-1].args["query"].startswith("An emperor of this country suffered from a brain disease")
        assert answer == "Japan; the tax was 3% in 1989."

    async def test_a_contender_without_image_search_skips_those_steps_and_says_so(
        self, world: Any, street_jpeg: ContenderImage
    ) -> None:
        w = world()
        steps, _, _ = await run_fixed(w, LEVEL_1, street_jpeg, reverse_search_backend="")
        assert [s.tool for s in steps][10:] == ["web_search", "visit", "visit", "visit"]
        assert steps[10].args["query"] == LEVEL_1  # nothing found by image: the question itself
        text = w.model_server.requests[0]["messages"][1]["content"][0]["text"]
        assert "Reverse image search with img_0: not run (reverse_image_search is not available: no reverse" in text

    async def test_an_empty_answer_fails_clearly(self, world: Any, street_jpeg: ContenderImage) -> None:
        w = world("")
        with pytest.raises(ContenderError, match="empty answer after the fixed tool steps"):
            await run_fixed(w, LEVEL_1, street_jpeg, web=False, reverse_search_backend="")


class TestLevel2Questions:
    def test_the_shared_sample_is_told_apart(self) -> None:
        for level, expected in (("level1_en", False), ("level2_en", True)):
            for line in (SAMPLE / f"{level}.jsonl").read_text().splitlines():
                assert asks_beyond_the_place(json.loads(line)["prompt"]) is expected, line[:120]

    def test_the_next_link_is_the_second_sentence(self) -> None:
        assert next_link_query(LEVEL_2).startswith("An emperor of this country") and next_link_query(LEVEL_2).endswith(
            "world war."
        )


class TestInThePoolFile:
    async def test_policy_fixed_makes_a_gate_contender_of_any_chat_model(self, tmp_path: Path) -> None:
        text = """
[[contenders]]
name = "m"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"

[[contenders]]
name = "m+fixed"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"
policy = "fixed"
tools = ["crop", "super_resolution", "web_search", "visit"]
"""
        (tmp_path / "arena.toml").write_text(text)
        pool = load_pool(tmp_path / "arena.toml")
        async with httpx.AsyncClient() as http:
            contenders = build_pool(ProviderDeps(http, LocalImageStore(tmp_path / "images"), pool))
        fixed = contenders["m+fixed"]
        assert isinstance(fixed, FixedPolicyContender) and fixed.gate
        assert [t.name for t in fixed.tools] == ["crop", "super_resolution", "visit"]
        assert "web_search" in fixed.disabled  # chosen, but the pool has no search backend

    def test_policy_fixed_with_gate_false_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / "arena.toml").write_text(
            '[[contenders]]\nname = "a"\nprovider = "openai"\nbase_url = "http://x/v1"\nmodel = "m"\n\n'
            '[[contenders]]\nname = "b"\nprovider = "openai"\nbase_url = "http://x/v1"\nmodel = "m"\n'
            'policy = "fixed"\ngate = false\n'
        )
        with pytest.raises(ValueError, match="policy = 'fixed' uses tools, so it cannot have gate = false"):
            load_pool(tmp_path / "arena.toml")

    def test_an_unknown_policy_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / "arena.toml").write_text(
            '[[contenders]]\nname = "a"\nprovider = "openai"\nbase_url = "http://x/v1"\nmodel = "m"\n\n'
            '[[contenders]]\nname = "b"\nprovider = "openai"\nbase_url = "http://x/v1"\nmodel = "m"\n'
            'policy = "random"\n'
        )
        with pytest.raises(ValueError, match="policy"):
            load_pool(tmp_path / "arena.toml")
