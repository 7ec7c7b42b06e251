"""`arena reviewers add|revoke|list` and `arena review stats [--json]`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from arena.config import Settings


def register(subparsers: Any) -> None:
    reviewers = subparsers.add_parser("reviewers", help="expert reviewers and their links")
    sub = reviewers.add_subparsers(title="reviewer commands", metavar="REVIEWERCOMMAND")
    add = sub.add_parser("add", help="add a reviewer and print their review link")
    add.add_argument("name")
    add.add_argument("--base-url", default="http://127.0.0.1:8000", help="where the arena is served")
    add.set_defaults(func=_add)
    revoke = sub.add_parser("revoke", help="revoke a reviewer's link (their reviews are kept)")
    revoke.add_argument("name")
    revoke.set_defaults(func=_revoke)
    listing = sub.add_parser("list", help="reviewers with their review counts")
    listing.set_defaults(func=_list)

    review = subparsers.add_parser("review", help="expert re-votes")
    review_sub = review.add_subparsers(title="review commands", metavar="REVIEWCOMMAND")
    stats = review_sub.add_parser("stats", help="expert-crowd and expert-expert agreement")
    stats.add_argument("--json", action="store_true", help="print the figures as JSON")
    stats.set_defaults(func=_stats)


def _add(args: argparse.Namespace) -> int:
    from arena.review.repository import add_reviewer

    with _session() as session:
        token = add_reviewer(session, args.name)
        session.commit()
    print(f"{args.base_url.rstrip('/')}/review?token={token}")
    print("Give this link to the reviewer only; it is shown once. `arena reviewers revoke NAME` ends it.")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    from arena.review.repository import revoke_reviewer

    with _session() as session:
        revoke_reviewer(session, args.name)
        session.commit()
    print(f"revoked: {args.name}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from arena.review.repository import list_reviewers

    with _session() as session:
        for r in list_reviewers(session):
            print(f"{r.name:<30} {'active' if r.active else 'revoked':<8} {r.reviews} reviews")
    return 0


def _stats(args: argparse.Namespace) -> int:
    from arena.review.stats import CLASS_NAMES, review_stats

    with _session() as session:
        stats = review_stats(session)
    if args.json:
        print(json.dumps(stats, ensure_ascii=False, indent=1))
        return 0
    print(f"{stats['reviews']} reviews of {stats['battles_reviewed']} battles by {len(stats['reviewers'])} reviewers")
    for title, part in (("expert vs crowd", stats["expert_crowd"]), ("expert vs expert", stats["expert_expert"])):
        overall = part["agreement"]
        if not overall["n"]:
            print(f"{title}: nothing to compare yet")
            continue
        kappa = "undefined" if part["kappa"] is None else f"{part['kappa']:.2f}"
        print(
            f"{title}: {overall['rate']:.1%} [{overall['ci_low']:.1%}, {overall['ci_high']:.1%}] "
            f"on {overall['n']}, Cohen's kappa {kappa}"
        )
        for label, p in part["by_class"].items():
            if p["n"]:
                print(f"  {CLASS_NAMES[label]:<10} {p['rate']:.1%} [{p['ci_low']:.1%}, {p['ci_high']:.1%}] on {p['n']}")
    return 0


@contextmanager
def _session() -> Iterator[Any]:
    from arena.db.ready import open_engine
    from arena.db.session import make_sessionmaker

    engine = open_engine(Settings().resolved_database_url)
    try:
        with make_sessionmaker(engine)() as session:
            yield session
    finally:
        engine.dispose()
