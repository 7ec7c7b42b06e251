"""Builds the pool's contenders from their configuration.

Each provider kind registers a builder that returns a `ChatModel`; the
registry wraps it as a plain contender, or as a GATE agent when the entry
says `gate = true`. Baselines build their contender directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from arena.config import ContenderConfig, PoolConfig
from arena.images.store import ImageStore
from arena.optional import optional_import
from arena.providers.base import ChatModel, Contender, GenerationLimits, ModelContender


@dataclass
class ProviderDeps:
    """What builders may need, made once in the app's lifespan."""

    http: httpx.AsyncClient
    images: ImageStore
    pool: PoolConfig
    extra: dict[str, Any] = field(default_factory=dict)


ChatBuilder = Callable[[ContenderConfig, ProviderDeps], ChatModel]
ContenderBuilder = Callable[[ContenderConfig, ProviderDeps], Contender]

PROVIDER_MODULES = (
    "arena.providers.openai",
    "arena.providers.anthropic",
    "arena.providers.gemini",
    "arena.providers.baselines",
)

CHAT_BUILDERS: dict[str, ChatBuilder] = {}
CONTENDER_BUILDERS: dict[str, ContenderBuilder] = {}


def register_chat(provider: str) -> Callable[[ChatBuilder], ChatBuilder]:
    def decorate(builder: ChatBuilder) -> ChatBuilder:
        CHAT_BUILDERS[provider] = builder
        return builder

    return decorate


def register_contender(provider: str) -> Callable[[ContenderBuilder], ContenderBuilder]:
    def decorate(builder: ContenderBuilder) -> ContenderBuilder:
        CONTENDER_BUILDERS[provider] = builder
        return builder

    return decorate


def limits_of(cfg: ContenderConfig) -> GenerationLimits:
    return GenerationLimits(
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,
        timeout=cfg.timeout,
        stall_timeout=min(cfg.timeout, float(cfg.options.get("stall_timeout", 30.0))),
    )


def build_chat_model(cfg: ContenderConfig, deps: ProviderDeps) -> ChatModel:
    """The chat model behind an API-backed entry (not a baseline)."""
    _load_providers()
    if cfg.provider not in CHAT_BUILDERS:
        known = ", ".join(sorted(CHAT_BUILDERS))
        raise ValueError(f"{cfg.name!r}: provider {cfg.provider!r} is not a chat API (chat providers: {known})")
    return CHAT_BUILDERS[cfg.provider](cfg, deps)


def build_contender(cfg: ContenderConfig, deps: ProviderDeps) -> Contender:
    _load_providers()
    if cfg.provider in CONTENDER_BUILDERS:
        return CONTENDER_BUILDERS[cfg.provider](cfg, deps)
    if cfg.provider not in CHAT_BUILDERS:
        known = ", ".join(sorted({*CHAT_BUILDERS, *CONTENDER_BUILDERS}))
        raise ValueError(f"contender {cfg.name!r}: unknown provider {cfg.provider!r} (known: {known})")
    model = build_chat_model(cfg, deps)
    if cfg.gate:
        from arena.gate import build_gate_contender  # optional layer, imported on demand

        return build_gate_contender(cfg, model, deps)
    return ModelContender(name=cfg.name, model=model, system_prompt=cfg.system_prompt)


def build_pool(deps: ProviderDeps) -> dict[str, Contender]:
    return {cfg.name: build_contender(cfg, deps) for cfg in deps.pool.contenders}


def _load_providers() -> None:
    # Importing a provider module registers its builders.
    for module in PROVIDER_MODULES:
        optional_import(module)
