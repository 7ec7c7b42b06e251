"""Composes the pool: one contender per `[[contenders]]` entry.

This is the one place that decides what a pool entry becomes: an API client
(`apis/`) wrapped as a plain contender, the same client wrapped in the GATE
agent when the entry says `gate = true`, or an offline baseline. Every kind
is listed here by name, so a reader finds each provider's module in one hop.
"""

from __future__ import annotations

from collections.abc import Callable

from arena.config import ContenderConfig
from arena.contenders.apis.anthropic import build_anthropic
from arena.contenders.apis.gemini import build_gemini
from arena.contenders.apis.openai import build_openai
from arena.contenders.base import ChatModel, Contender, ModelContender
from arena.contenders.baselines import build_baseline
from arena.contenders.deps import ProviderDeps
from arena.contenders.gate import build_fixed_policy_contender, build_gate_contender
from arena.contenders.instruction import DEFAULT_INSTRUCTION, compose_system_prompt

__all__ = ["CHAT_APIS", "OFFLINE_CONTENDERS", "ProviderDeps", "build_chat_model", "build_contender", "build_pool"]

CHAT_APIS: dict[str, Callable[[ContenderConfig, ProviderDeps], ChatModel]] = {
    "openai": build_openai,  # any OpenAI-compatible endpoint
    "anthropic": build_anthropic,
    "gemini": build_gemini,
}
# Contenders that are not chat models: they answer on their own.
OFFLINE_CONTENDERS: dict[str, Callable[[ContenderConfig, ProviderDeps], Contender]] = {
    "baseline": build_baseline,
}


def build_pool(deps: ProviderDeps) -> dict[str, Contender]:
    """Every contender of the pool file, by name."""
    return {cfg.name: build_contender(cfg, deps) for cfg in deps.pool.contenders}


def build_contender(cfg: ContenderConfig, deps: ProviderDeps) -> Contender:
    if cfg.provider in OFFLINE_CONTENDERS:
        if cfg.tools is not None or cfg.policy != "react":
            raise ValueError(
                f"contender {cfg.name!r}: tools and policy are for chat models; "
                f"a {cfg.provider!r} contender has its own (gate = true gives it the fixed policy's views)"
            )
        return OFFLINE_CONTENDERS[cfg.provider](cfg, deps)
    if cfg.provider not in CHAT_APIS:
        known = ", ".join(sorted({*CHAT_APIS, *OFFLINE_CONTENDERS}))
        raise ValueError(f"contender {cfg.name!r}: unknown provider {cfg.provider!r} (known: {known})")
    model = build_chat_model(cfg, deps)
    # the same instruction for the plain and the GATE variant: they differ only in tools
    system_prompt = compose_system_prompt(arena_instruction(deps), cfg.system_prompt)
    if cfg.policy == "fixed":  # the paper's fixed tool steps, then the model answers
        return build_fixed_policy_contender(cfg, model, deps, system_prompt=system_prompt)
    if cfg.gate:
        return build_gate_contender(cfg, model, deps, system_prompt=system_prompt)
    return ModelContender(name=cfg.name, model=model, system_prompt=system_prompt)


def arena_instruction(deps: ProviderDeps) -> str:
    """The instruction every chat contender of this pool shares."""
    given = deps.pool.battles.instruction
    return DEFAULT_INSTRUCTION if given is None else given


def build_chat_model(cfg: ContenderConfig, deps: ProviderDeps) -> ChatModel:
    """The chat model behind an API-backed entry (not a baseline)."""
    if cfg.provider not in CHAT_APIS:
        known = ", ".join(sorted(CHAT_APIS))
        raise ValueError(f"{cfg.name!r}: provider {cfg.provider!r} is not a chat API (chat providers: {known})")
    return CHAT_APIS[cfg.provider](cfg, deps)
