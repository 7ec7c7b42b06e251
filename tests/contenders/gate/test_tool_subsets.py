"""Tool subsets per contender (`tools = [...]` in the pool file), so the
paper's ablations (image-only, search-only, all tools) are contenders of one
pool: checked when the pool file loads, and honoured by what the model is offered."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from arena.config import GATE_TOOLS, GateSettings, load_pool
from arena.contenders.compose import ProviderDeps, build_pool
from arena.contenders.gate import GateContender
from arena.contenders.gate.toolbox import build_toolbox
from arena.images.store import LocalImageStore

POOL = """
[tools]
search_backend = "searxng"
search_url = "http://127.0.0.1:9/searxng"
code = false

[[contenders]]
name = "m"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"

[[contenders]]
name = "m+images"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"
gate = true
tools = ["crop", "rotate", "auxiliary_lines", "super_resolution", "pixel_analysis"]

[[contenders]]
name = "m+search"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"
gate = true
tools = ["web_search", "visit"]

[[contenders]]
name = "m+crop+search"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"
gate = true
tools = ["crop", "web_search"]

[[contenders]]
name = "m+gate"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"
gate = true
"""

BASE = """
[[contenders]]
name = "a"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"

[[contenders]]
name = "b"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "arena.toml"
    path.write_text(text)
    return path


class TestToolSubsets:
    async def test_each_contender_is_offered_its_own_tools(self, tmp_path: Path) -> None:
        pool = load_pool(write(tmp_path, POOL))
        async with httpx.AsyncClient() as http:
            contenders = build_pool(ProviderDeps(http, LocalImageStore(tmp_path / "images"), pool))
        offered = {name: [t.name for t in c.tools] for name, c in contenders.items() if isinstance(c, GateContender)}
        assert offered["m+images"] == ["crop", "rotate", "auxiliary_lines", "super_resolution", "pixel_analysis"]
        assert offered["m+search"] == ["visit", "web_search"]
        assert offered["m+crop+search"] == ["crop", "web_search"]
        assert "web_image_search" in offered["m+gate"] and "crop" in offered["m+gate"]
        assert not contenders["m"].gate and all(contenders[n].gate for n in offered)

    async def test_a_chosen_tool_without_a_backend_says_why(self, tmp_path: Path) -> None:
        pool = load_pool(write(tmp_path, POOL.replace('search_backend = "searxng"', 'search_backend = ""')))
        async with httpx.AsyncClient() as http:
            contender = build_pool(ProviderDeps(http, LocalImageStore(tmp_path / "images"), pool))["m+search"]
        assert isinstance(contender, GateContender)
        assert [t.name for t in contender.tools] == ["visit"]
        assert contender.disabled == {"web_search": "no search backend configured ([tools] search_backend)"}

    def test_an_unknown_tool_is_an_error_naming_it(self, tmp_path: Path) -> None:
        text = BASE + 'gate = true\ntools = ["crop", "web_serach"]\n'
        with pytest.raises(ValueError) as failure:
            load_pool(write(tmp_path, text))
        message = str(failure.value)
        assert "contender 'b': unknown tool 'web_serach' in tools" in message
        assert "web_search" in message  # the known names, to pick from

    def test_tools_need_a_gate_contender(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="tools = \\[...\\] is for GATE contenders: add gate = true"):
            load_pool(write(tmp_path, BASE + 'tools = ["crop"]\n'))

    def test_an_empty_list_is_the_no_tool_ablation(self, tmp_path: Path) -> None:
        pool = load_pool(write(tmp_path, BASE + "gate = true\ntools = []\n"))
        assert pool.contenders[1].tools == []

    async def test_baselines_refuse_tools(self, tmp_path: Path) -> None:
        text = BASE + '\n[[contenders]]\nname = "ocr"\nprovider = "baseline"\nmodel = "ocr-geolocator"\n'
        pool = load_pool(write(tmp_path, text + 'gate = true\ntools = ["crop"]\n'))
        async with httpx.AsyncClient() as http:
            with pytest.raises(ValueError, match="'ocr': tools and policy are for chat models"):
                build_pool(ProviderDeps(http, LocalImageStore(tmp_path / "images"), pool))

    async def test_the_known_names_are_the_tools_the_toolbox_builds(self) -> None:
        settings = GateSettings(search_backend="searxng", search_url="http://127.0.0.1:9")
        async with httpx.AsyncClient() as http:
            box = build_toolbox(settings, http)
        assert {t.name for t in box.tools} | set(box.disabled) == set(GATE_TOOLS)
