"""GATE: tool-equipped contenders (GeoBrowse's ReAct agent with think-with-image
and knowledge tools) and its fixed policy of views.

`build_gate_contender` wraps a chat model as a GATE contender; the registry
calls it for pool entries with `gate = true`. `arena.gate.policy` is the fixed
policy used by offline baselines. The agent's modules load on first use, so
importing the policy stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arena.config import ContenderConfig
    from arena.providers.base import ChatModel, Contender
    from arena.providers.registry import ProviderDeps

__all__ = ["build_gate_contender"]


def build_gate_contender(cfg: ContenderConfig, model: ChatModel, deps: ProviderDeps) -> Contender:
    """A GATE agent over `model`, with the tools the pool file's `[tools]` enables."""
    from arena.gate.agent import build_gate_contender as build

    return build(cfg, model, deps)
