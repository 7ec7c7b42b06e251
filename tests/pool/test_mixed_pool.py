"""A pool mixing all three API kinds, each on a loopback server speaking its
real protocol: battles are drawn by the policy and answered through the
real provider clients; a contender whose API keeps failing cools down and
comes back; answers that name their maker flag the battle."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from arena.config import ContenderConfig, PoolConfig
from arena.contenders.base import (
    Contender,
    ContenderError,
    ContenderImage,
    TextDelta,
    Usage,
)
from arena.contenders.compose import ProviderDeps, build_pool
from arena.images.store import LocalImageStore
from arena.pool import PoolPolicy, find_identity_leaks
from tests.pool.model_apis import ModelAPIs
from tests.servers import serve_in_thread

PHOTO = ContenderImage(jpeg=b"\xff\xd8\xff\xe0 a tiny stand-in jpeg \xff\xd9", width=8, height=6)


@pytest.fixture(scope="module")
def servers() -> Iterator[str]:
    with serve_in_thread(ModelAPIs().app) as url:
        yield url


def mixed_pool(url: str) -> PoolConfig:
    def entry(name: str, provider: str, model: str, url: str) -> ContenderConfig:
        return ContenderConfig(
            name=name,
            provider=provider,
            model=model,
            base_url=url,
            api_key_env="TEST_KEY",
            timeout=10,
            options={"stall_timeout": 3},
        )

    return PoolConfig(
        contenders=[
            entry("gpt-like", "openai", "gpt-ok", url + "/v1"),
            entry("gpt-leaky", "openai", "gpt-leaky", url + "/v1"),
            entry("claude-ok", "anthropic", "claude-ok", url),
            entry("claude-down", "anthropic", "claude-down", url),
            entry("gemini-ok", "gemini", "gemini-ok", url),
            entry("gemini-leaky", "gemini", "gemini-leaky", url),
        ],
        sampling={"failure_threshold": 2, "cooldown_seconds": 60},
    )


@dataclass
class Battle:
    pair: tuple[str, str]
    texts: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    usage: dict[str, Usage] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)

    @property
    def votable(self) -> bool:  # a battle with a failed side can't be voted on
        return not self.errors


async def run_battle(
    pair: tuple[str, str], pool: dict[str, Contender], policy: PoolPolicy, config: PoolConfig
) -> Battle:
    battle = Battle(pair)

    async def side(name: str) -> None:
        parts: list[str] = []
        try:
            async for event in pool[name].stream("Where was this photo taken?", PHOTO):
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                elif isinstance(event, Usage):
                    battle.usage[name] = event
        except ContenderError as exc:
            battle.errors[name] = exc.message
            policy.record_result(name, False)
            return
        battle.texts[name] = "".join(parts)
        policy.record_result(name, True)

    await asyncio.gather(*(side(name) for name in pair))
    if battle.votable and find_identity_leaks(battle.texts.values(), config):
        battle.flags.append("identity_leak")
    return battle


class TestMixedPool:
    async def test_battles_outages_and_leaks(
        self, servers: str, http: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("TEST_KEY", "sk-test")
        config = mixed_pool(servers)
        pool = build_pool(ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=config))
        clock = [1_700_000_000.0]
        policy = PoolPolicy(PoolPolicy.from_config(config).config, clock=lambda: clock[0])
        rng = random.Random(3)

        battles = [await run_battle(policy.draw(rng, {}), pool, policy, config) for _ in range(40)]

        # All three API kinds answered, with usage, through their own clients.
        answered = {name for b in battles for name in b.texts}
        assert {"gpt-like", "claude-ok", "gemini-ok"} <= answered
        assert {"gpt-like", "claude-ok", "gemini-ok"} <= set().union(*(b.usage for b in battles))
        assert all("Saint Petersburg" in b.texts["claude-ok"] for b in battles if "claude-ok" in b.texts)

        # The failing contender: its battles are not votable, and after two
        # failures it sits out; nothing after that draws it.
        failed = [i for i, b in enumerate(battles) if "claude-down" in b.errors]
        assert len(failed) == 2
        assert all(not battles[i].votable for i in failed)
        assert "HTTP 529 (overloaded): Overloaded" in battles[failed[0]].errors["claude-down"]
        assert all("claude-down" not in b.pair for b in battles[failed[-1] + 1 :])
        assert policy.status("claude-down").startswith("cooling down until")

        # Leaks: every votable battle with a leaky contender is flagged, no other.
        for b in battles:
            if b.votable:
                assert ("identity_leak" in b.flags) == bool({"gpt-leaky", "gemini-leaky"} & set(b.pair)), b.pair
        assert any(b.flags for b in battles)

        # After the cool-down the contender is back in rotation.
        clock[0] += 61
        assert policy.status("claude-down") == "active"
        again = Counter(n for _ in range(200) for n in policy.draw(rng, {}))
        assert again["claude-down"] > 0
