"""`arena judge --judge NAME`: a vision model votes on the stored, voted
battles it has not judged yet (both orders), then prints its agreement with
the human votes overall and per outcome, Cohen's kappa and its position
consistency."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.config import Settings

if TYPE_CHECKING:  # the runner loads the contender stack: only when a judge runs
    from arena.judge.runner import JudgeCounts


def register(subparsers: Any) -> None:
    judge = subparsers.add_parser(
        "judge",
        help="let a vision model vote on voted battles and compare it with the humans",
        description="A configured vision model (a pool contender or the [judge] table) votes on every stored, "
        "voted battle it has not judged, shown in both orders; verdicts are stored. Prints agreement with the "
        "human votes overall and per outcome, Cohen's kappa and position consistency.",
    )
    judge.add_argument(
        "--judge", required=False, help="the judging model: a pool contender or the [judge] table's name"
    )
    judge.add_argument("--json", type=Path, help="write the report as JSON here ('-' for standard output)")
    judge.add_argument("--limit", type=int, help="judge at most this many new battles")
    judge.add_argument("--concurrency", type=int, default=4, help="battles judged at once (default 4)")
    judge.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from arena.bench.judges import resolve_judge

    settings = Settings()
    cfg = resolve_judge(settings.pool, args.judge)
    if cfg is None:
        raise ValueError("no judge configured: pass --judge NAME (a pool contender) or add a [judge] table")
    if args.concurrency < 1 or (args.limit is not None and args.limit < 0):
        raise ValueError("--concurrency must be at least 1 and --limit not negative")
    report, counts = asyncio.run(_judge(settings, cfg, args))
    # with --json - the JSON alone goes to standard output, for pipes
    _print(report, sys.stderr if str(args.json) == "-" else sys.stdout)
    if args.json is not None:
        text = json.dumps(report, ensure_ascii=False, indent=1)
        if str(args.json) == "-":
            print(text)
        else:
            args.json.write_text(text + "\n", encoding="utf-8")
    if counts.failed and not counts.judged:  # the judge is down or misconfigured: say so to scripts too
        print(
            f"arena: judge {cfg.name} could not judge any of the {counts.failed} battles it tried",
            file=sys.stderr,
        )
        return 1
    return 0


async def _judge(settings: Settings, cfg: Any, args: argparse.Namespace) -> tuple[dict[str, Any], JudgeCounts]:
    """The report after judging what is new, and the counts of this run."""
    import httpx

    from arena.bench.judges import judge_model
    from arena.contenders.deps import ProviderDeps
    from arena.db.ready import open_engine
    from arena.db.session import make_sessionmaker
    from arena.images.store import store_for
    from arena.judge.report import judge_report
    from arena.judge.runner import judge_battles

    engine = open_engine(settings.resolved_database_url)
    sessions = make_sessionmaker(engine)
    images = store_for(settings)
    try:
        async with httpx.AsyncClient(follow_redirects=False) as http:
            deps = ProviderDeps(http=http, images=images, pool=settings.pool)
            from arena.judge.verdict import BattleJudge

            judge = BattleJudge(judge_model(cfg, deps, max_tokens=512), name=cfg.name, timeout=cfg.timeout)
            counts = await judge_battles(judge, sessions, images, concurrency=args.concurrency, limit=args.limit)
        print(f"judge {cfg.name}: {counts.judged} battles judged, {counts.failed} failed", file=sys.stderr)
        for error in counts.errors[:5]:
            print(f"  {error}", file=sys.stderr)
        with sessions() as session:
            return judge_report(session, cfg.name), counts
    finally:
        engine.dispose()


def _print(report: dict[str, Any], out: Any) -> None:
    names = {"a": "left win", "tie": "tie", "b": "right win", "both_bad": "both bad"}
    overall = report["agreement"]
    if not report["battles"]:
        print(f"judge {report['judge']}: no judged battles yet (battles need a vote and both answers)", file=out)
        return
    kappa = "undefined" if report["kappa"] is None else f"{report['kappa']:.2f}"
    consistency = report["position_consistency"]
    print(
        f"judge {report['judge']} on {report['battles']} voted battles: agreement with the human votes "
        f"{overall['rate']:.1%} [{overall['ci_low']:.1%}, {overall['ci_high']:.1%}], Cohen's kappa {kappa}, "
        f"position consistency {consistency['rate']:.1%}",
        file=out,
    )
    for label, p in report["by_class"].items():
        rate = "—" if p["rate"] is None else f"{p['rate']:.1%} [{p['ci_low']:.1%}, {p['ci_high']:.1%}]"
        print(f"  human {names[label]:<10} {int(p['n']):>5} battles  judge agrees {rate}", file=out)
