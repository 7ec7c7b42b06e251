"""`arena audit anonymity [--json]`: how recognisable are the contenders?"""

from __future__ import annotations

import argparse
import json
from typing import Any

from arena.config import Settings


def register(subparsers: Any) -> None:
    audit = subparsers.add_parser("audit", help="audit the arena's own weak spots")
    sub = audit.add_subparsers(dest="audit", required=True)
    anonymity = sub.add_parser(
        "anonymity",
        help="can a text classifier tell the contenders apart from their answers?",
        description="Cross-validate TF-IDF + logistic regression on the stored answers (and on what voters see "
        "of GATE trajectories) predicting the contender; print accuracy per contender against chance.",
    )
    anonymity.add_argument("--json", action="store_true", help="print the report as JSON")
    anonymity.add_argument("--limit", type=int, default=5000, help="newest answers read (default 5000)")
    anonymity.add_argument("--folds", type=int, default=5)
    anonymity.add_argument(
        "--warn-above", type=float, help="accuracy that warns (default: halfway from chance to 100%%)"
    )
    anonymity.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from arena.audit.anonymity import audit, samples_from_database
    from arena.db.ready import open_engine
    from arena.db.session import make_sessionmaker

    settings = Settings()
    engine = open_engine(settings.resolved_database_url)
    try:
        with make_sessionmaker(engine)() as session:
            samples = samples_from_database(session, args.limit)
    finally:
        engine.dispose()
    report = audit(samples, folds=args.folds, warn_above=args.warn_above)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print(render(report))
    return 1 if report["warnings"] else 0


def render(report: dict[str, Any]) -> str:
    lines = [report["method"]]
    for view, title in (("answers", "final answers"), ("trajectories", "GATE steps shown before the vote")):
        section = report[view]
        if section is None:
            lines.append(f"\n{title}: too few stored (at least two contenders with 5 each are needed)")
            continue
        lines.append(
            f"\n{title}: {section['samples']} samples, accuracy {section['accuracy']:.1%} "
            f"(chance {section['chance']:.1%}, warning above {section['warn_above']:.0%})"
        )
        lines.append(f"  {'contender':<32} {'answers':>7} {'identified':>10}")
        for row in section["contenders"]:
            mark = "  WARNING" if row["warning"] else ""
            lines.append(f"  {row['contender']:<32} {row['answers']:>7} {row['accuracy']:>10.1%}{mark}")
    for warning in report["warnings"]:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)
