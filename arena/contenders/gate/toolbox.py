"""Which tools a GATE contender is offered, from the `[tools]` settings.

A tool without a working backend is not offered (the model never sees it);
`disabled` says why, for `arena models` and the logs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx

from arena.config import GATE_TOOLS, ContenderConfig, GateSettings
from arena.contenders.gate.tools.base import Tool
from arena.contenders.gate.tools.code import code_tools
from arena.contenders.gate.tools.image import image_tools
from arena.contenders.gate.tools.web import web_tools


@dataclass
class Toolbox:
    tools: list[Tool] = field(default_factory=list)
    disabled: dict[str, str] = field(default_factory=dict)  # tool name -> reason


def build_toolbox(
    settings: GateSettings,
    http: httpx.AsyncClient,
    *,
    only: Sequence[str] | None = None,
    public_url: str = "",
    allow_loopback: bool = False,
) -> Toolbox:
    """All think-with-image tools, plus the knowledge and code tools that are
    switched on and have what they need; with `only` (a contender's
    `tools = [...]`), just those. `public_url` is ARENA_PUBLIC_URL;
    `allow_loopback` is for tests only."""
    if only is not None:
        unknown = sorted(set(only) - set(GATE_TOOLS))
        if unknown:  # the pool file is checked on load; this is for callers that build by hand
            raise ValueError(
                f"unknown GATE tool {', '.join(map(repr, unknown))} (the tools are: {', '.join(GATE_TOOLS)})"
            )
    box = Toolbox(tools=image_tools(settings.tool_timeout))
    for tools, disabled in (
        web_tools(settings, http, public_url=public_url, allow_loopback=allow_loopback),
        code_tools(settings),
    ):
        box.tools.extend(tools)
        box.disabled.update(disabled)
    if only is not None:
        chosen = set(only)
        box.tools = [t for t in box.tools if t.name in chosen]
        box.disabled = {name: why for name, why in box.disabled.items() if name in chosen}
    return box


def contender_toolbox(
    cfg: ContenderConfig, pool_tools: GateSettings, http: httpx.AsyncClient, *, public_url: str = ""
) -> tuple[GateSettings, Toolbox]:
    """A GATE contender's settings (`[tools]` with its own overrides) and the tools it is
    offered: what the ReAct agent, the fixed policy and `arena models` all build."""
    settings = GateSettings.from_pool(pool_tools, cfg.options)
    return settings, build_toolbox(settings, http, only=cfg.tools, public_url=public_url)
