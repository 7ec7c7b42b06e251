"""What building a contender may need, made once in the app's lifespan."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from arena.config import ContenderConfig, PoolConfig
from arena.contenders.base import GenerationLimits
from arena.contenders.upstream import UpstreamClients
from arena.images.store import ImageStore


@dataclass
class ProviderDeps:
    """The shared HTTP client, the image store and the pool file; `upstream`, when
    given, holds one connection pool per provider (`arena serve`)."""

    http: httpx.AsyncClient
    images: ImageStore
    pool: PoolConfig
    upstream: UpstreamClients | None = None
    public_url: str = ""  # ARENA_PUBLIC_URL: where search engines fetch the arena's images

    def client_for(self, base_url: str) -> httpx.AsyncClient:
        """The HTTP client whose pool serves this provider."""
        return self.upstream.for_url(base_url) if self.upstream is not None else self.http


def limits_of(cfg: ContenderConfig) -> GenerationLimits:
    """The generation limits a pool entry sets."""
    return GenerationLimits(
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,
        timeout=cfg.timeout,
        stall_timeout=min(cfg.timeout, float(cfg.options.get("stall_timeout", 30.0))),
    )
