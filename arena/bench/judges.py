"""Which model judges: a pool contender named on the command line, or the
pool file's `[judge]` table (the same keys as a contender)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from arena.config import ContenderConfig, PoolConfig


def judge_table(pool: PoolConfig) -> ContenderConfig | None:
    """The `[judge]` table as a contender entry, or None without one."""
    table = pool.judge
    if table is None:
        return None
    if not isinstance(table, dict):
        # a mistake in the pool file: reported like its other errors
        raise ValueError("[judge] must be a table with the keys of a contender (provider, model, base_url, ...)")  # noqa: TRY004
    try:
        return ContenderConfig(**{"name": "judge", **table})
    except ValidationError as exc:
        raise ValueError(f"[judge]: {exc}") from None


def resolve_judge(pool: PoolConfig, name: str | None) -> ContenderConfig | None:
    """The judge's entry: `name` from the pool or the `[judge]` table; with no
    name, the `[judge]` table if there is one; else None (grade offline)."""
    table = judge_table(pool)
    if name is None:
        return _checked(table) if table is not None else None
    for cfg in pool.contenders:
        if cfg.name == name:
            return _checked(cfg)
    if table is not None and table.name == name:
        return _checked(table)
    known = ", ".join([c.name for c in pool.contenders] + ([table.name] if table else []))
    raise ValueError(f"no judge named {name!r} in the pool (known: {known})")


def judge_model(cfg: ContenderConfig, deps: Any, *, max_tokens: int = 1024) -> Any:
    """The judge's chat model: deterministic, with room for a verdict."""
    from arena.contenders.compose import build_chat_model

    judge_cfg = cfg.model_copy(update={"temperature": 0.0, "max_tokens": max(max_tokens, 256), "gate": False})
    return build_chat_model(judge_cfg, deps)


def _checked(cfg: ContenderConfig) -> ContenderConfig:
    if cfg.provider == "baseline":
        raise ValueError(f"{cfg.name!r} is an offline baseline, not a model: it cannot judge")
    return cfg
