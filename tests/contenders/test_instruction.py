"""The arena instruction: a model's plain and GATE variants are told the same
thing about the answer, so they differ only in their tools (issue 11, item 5).
Both variants talk to one loopback OpenAI-compatible server, which records
what each was sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.config import PoolConfig
from arena.contenders.base import ContenderImage
from arena.contenders.compose import build_pool
from arena.contenders.deps import ProviderDeps
from arena.contenders.instruction import DEFAULT_INSTRUCTION
from arena.images.store import LocalImageStore
from tests.servers.openai_compatible import OpenAICompatibleServer


def two_variants(base_url: str, **tables: Any) -> PoolConfig:
    entry = {"provider": "openai", "base_url": base_url, "model": "echo-m", "timeout": 20}
    return PoolConfig.model_validate(
        {
            "contenders": [{"name": "m", **entry}, {"name": "m+gate", "gate": True, **entry}],
            "tools": {"code": False, "web": False, "max_turns": 2},
            **tables,
        }
    )


async def first_requests(
    pool: PoolConfig, server: OpenAICompatibleServer, tmp_path: Path, image: ContenderImage
) -> dict[str, dict[str, Any]]:
    """The first request body each contender sent."""
    sent: dict[str, dict[str, Any]] = {}
    async with httpx.AsyncClient() as http:
        for name, contender in build_pool(ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=pool)).items():
            server.requests.clear()
            [event async for event in contender.stream("Where was this photo taken?", image)]
            sent[name] = server.requests[0]
    return sent


async def system_prompts(
    pool: PoolConfig, server: OpenAICompatibleServer, tmp_path: Path, image: ContenderImage
) -> dict[str, str]:
    """The system message each contender sent ("" when it sent none)."""
    sent = await first_requests(pool, server, tmp_path, image)
    return {name: _system(body["messages"]) for name, body in sent.items()}


def _system(messages: list[dict[str, Any]]) -> str:
    return str(messages[0]["content"]) if messages[0]["role"] == "system" else ""


class TestSharedInstruction:
    async def test_plain_and_gate_get_the_same_instruction(
        self, openai_server: tuple[str, OpenAICompatibleServer], tmp_path: Path, street_jpeg: ContenderImage
    ) -> None:
        url, server = openai_server
        sent = await first_requests(two_variants(url), server, tmp_path, street_jpeg)
        assert _system(sent["m"]["messages"]) == DEFAULT_INSTRUCTION
        # GATE adds how to use its tools, then the very same instruction
        assert _system(sent["m+gate"]["messages"]).endswith("\n\n" + DEFAULT_INSTRUCTION)
        assert "crop" in {tool["function"]["name"] for tool in sent["m+gate"]["tools"]}
        assert "tools" not in sent["m"]

    async def test_the_pool_file_replaces_it_and_the_contender_adds_to_it(
        self, openai_server: tuple[str, OpenAICompatibleServer], tmp_path: Path, street_jpeg: ContenderImage
    ) -> None:
        url, server = openai_server
        pool = two_variants(url, battles={"instruction": "Answer in one sentence."})
        pool.contenders[0].system_prompt = "Be brief."
        sent = await system_prompts(pool, server, tmp_path, street_jpeg)
        assert sent["m"] == "Answer in one sentence.\n\nBe brief."
        assert sent["m+gate"].endswith("\n\nAnswer in one sentence.")
        assert DEFAULT_INSTRUCTION not in sent["m+gate"]

    async def test_an_empty_instruction_sends_plain_contenders_none(
        self, openai_server: tuple[str, OpenAICompatibleServer], tmp_path: Path, street_jpeg: ContenderImage
    ) -> None:
        url, server = openai_server
        sent = await system_prompts(two_variants(url, battles={"instruction": ""}), server, tmp_path, street_jpeg)
        assert sent["m"] == ""
        assert DEFAULT_INSTRUCTION not in sent["m+gate"]

    def test_a_misspelled_key_is_an_error_naming_it(self) -> None:
        with pytest.raises(ValueError, match="instructions"):
            PoolConfig.model_validate({"battles": {"instructions": "x"}})
