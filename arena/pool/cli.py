"""`arena models`: the pool with its sampling weights, status, votes, and the
tools each GATE contender is offered (and why any other is not)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from arena.config import PoolConfig


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "models",
        help="list the pool: provider, model, weight, gate, status, votes and tools",
        description="List the contenders of the pool file (ARENA_CONFIG) with their effective sampling weight, "
        "status and vote counts from the database. The status is 'excluded' for weight 0, and shows the outage "
        "cool-downs the replicas share in the database. A GATE contender shows its tool policy (react or fixed) "
        "and the tools it is offered; --json also says why each tool it is not offered is off.",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per contender instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from arena.config import Settings

    settings = Settings()
    pool = settings.pool
    counts, cooling, problem = _from_database(settings.resolved_database_url)
    if problem:
        print(f"arena models: vote counts unavailable: {problem}", file=sys.stderr)
    from arena.pool.cooldowns import MemoryCooldowns
    from arena.pool.policy import PoolPolicy

    rows = pool_rows(pool, counts, PoolPolicy.from_config(pool, MemoryCooldowns.of(cooling)))
    toolboxes = asyncio.run(_toolboxes(pool, settings.public_url))
    for row in rows:
        box = toolboxes.get(row["name"])
        row["tools"] = None if box is None else [t.name for t in box.tools]
        row["tools_off"] = None if box is None else box.disabled
    if args.json:
        for row in rows:
            print(json.dumps(row, ensure_ascii=False))
    else:
        print(_table(rows))
    return 0


def pool_rows(pool: PoolConfig, vote_counts: dict[str, int] | None, policy: Any = None) -> list[dict[str, Any]]:
    """One row per contender; pass the live `PoolPolicy` to show its cool-downs."""
    from arena.pool.policy import PoolPolicy

    policy = policy or PoolPolicy.from_config(pool)
    weights = policy.effective_weights(vote_counts or {})
    rows = []
    for c in pool.contenders:
        status = "excluded (weight 0)" if weights[c.name] <= 0 else policy.status(c.name)
        rows.append({
            "name": c.name,
            "provider": c.provider,
            "model": c.model,
            "weight": round(weights[c.name], 4),
            "gate": c.gate,
            "policy": c.policy if c.gate else None,
            "status": status,
            "votes": None if vote_counts is None else vote_counts.get(c.name, 0),
        })  # fmt: skip
    return rows


async def _toolboxes(pool: PoolConfig, public_url: str) -> dict[str, Any]:
    """Each GATE contender's toolbox, built as the arena builds it (no request is sent)."""
    import httpx

    from arena.contenders.gate.toolbox import contender_toolbox

    async with httpx.AsyncClient() as http:
        return {
            c.name: contender_toolbox(c, pool.tools, http, public_url=public_url)[1] for c in pool.contenders if c.gate
        }


def _from_database(url: str) -> tuple[dict[str, int] | None, dict[str, float], str]:
    """Vote counts (None if unknown), cool-downs in force, and what kept us from reading them."""
    import time

    from sqlalchemy.exc import SQLAlchemyError

    from arena.db.ready import schema_problem
    from arena.db.session import make_engine, make_sessionmaker
    from arena.pool.cooldowns import SharedCooldowns
    from arena.pool.counts import vote_counts

    problem = schema_problem(url)  # checked first: connecting to a missing SQLite file would create it
    if problem:
        return None, {}, problem
    engine = make_engine(url)
    try:
        sessions = make_sessionmaker(engine)
        with sessions() as session:
            counts = vote_counts(session)
        return counts, SharedCooldowns(sessions).cooling(time.time()), ""
    except SQLAlchemyError as exc:
        detail = getattr(exc, "orig", None) or exc
        return None, {}, (str(detail).splitlines() or [type(exc).__name__])[0][:120]
    finally:
        engine.dispose()


def _table(rows: list[dict[str, Any]]) -> str:
    headers = ["name", "provider", "model", "weight", "gate", "status", "votes", "tools"]
    cells = [[_cell(row[h]) for h in headers[:-1]] + [_tools_cell(row)] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(line.rstrip() for line in lines)


def _tools_cell(row: dict[str, Any]) -> str:
    if not row["gate"]:
        return "-"
    offered = row.get("tools")
    if offered is None:  # rows made without toolboxes
        return str(row["policy"])
    return f"{row['policy']}: {', '.join(offered) or 'none'}"


def _cell(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
