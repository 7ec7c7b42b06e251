"""Which tools a GATE contender is offered, from the `[tools]` settings.

A tool without a working backend is not offered (the model never sees it);
`disabled` says why, for `arena models` and the logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from arena.config import GateSettings
from arena.contenders.gate.tools.base import Tool
from arena.contenders.gate.tools.code import code_tools
from arena.contenders.gate.tools.image import image_tools
from arena.contenders.gate.tools.web import web_tools


@dataclass
class Toolbox:
    tools: list[Tool] = field(default_factory=list)
    disabled: dict[str, str] = field(default_factory=dict)  # tool name -> reason


def build_toolbox(settings: GateSettings, http: httpx.AsyncClient, *, allow_loopback: bool = False) -> Toolbox:
    """All think-with-image tools, plus the knowledge and code tools that are
    switched on and have what they need. `allow_loopback` is for tests only."""
    box = Toolbox(tools=image_tools(settings.tool_timeout))
    for tools, disabled in (
        web_tools(settings, http, allow_loopback=allow_loopback),
        code_tools(settings),
    ):
        box.tools.extend(tools)
        box.disabled.update(disabled)
    return box
