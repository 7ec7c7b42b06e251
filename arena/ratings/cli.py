"""`arena rank`: votes -> leaderboard snapshot (a database row, or a JSON file)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from arena.config import Settings
from arena.ratings.options import CI_METHODS, TIE_MODELS, RankOptions

DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def register(subparsers: Any) -> None:
    rank = subparsers.add_parser(
        "rank",
        help="compute the leaderboard from the votes",
        description="Fit Bradley-Terry ratings (plain and style-adjusted) with confidence intervals "
        "and store a leaderboard snapshot. Defaults come from [ratings] in the pool file.",
    )
    rank.add_argument(
        "--input",
        type=Path,
        help="rank votes from an export file (.jsonl, .json, .csv, .parquet) instead of the database",
    )
    rank.add_argument("--output", type=Path, help="write the snapshot JSON here instead of storing it in the database")
    rank.add_argument("--rounds", type=int, help="bootstrap rounds (default 100)")
    rank.add_argument("--ci", choices=CI_METHODS, help="confidence intervals: bootstrap (default) or sandwich (fast)")
    rank.add_argument("--seed", type=int, help="random seed of the bootstrap (default 0)")
    rank.add_argument(
        "--ties",
        choices=TIE_MODELS,
        help="tie model: half (default: a tie is half a win each), "
        "davidson (ties get their own parameter) or ignore (decisive votes only)",
    )
    rank.add_argument(
        "--inverse-propensity",
        action="store_true",
        default=None,
        help="weight each vote by 1 / the probability its pair was drawn with (targets uniform sampling)",
    )
    rank.add_argument("--no-style", action="store_true", help="skip the style-adjusted ratings")
    rank.add_argument("--anchor", help="contender held at --anchor-rating (e.g. gpt-4o)")
    rank.add_argument("--anchor-rating", type=float, help="rating of the anchor (default 1000)")
    rank.add_argument(
        "--every",
        type=parse_duration,
        metavar="DURATION",
        help="keep running: recompute every DURATION (e.g. 10m) when new votes arrived",
    )
    rank.set_defaults(func=run)


def parse_duration(text: str) -> float:
    """`10m` -> 600.0; units s, m, h, d; a bare number is seconds."""
    match = DURATION.match(text)
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 30s, 10m or 1h")
    return float(match.group(1)) * UNIT_SECONDS[match.group(2)]


def options_from(args: argparse.Namespace, configured: dict[str, Any]) -> RankOptions:
    """Command-line flags over `[ratings]` from the pool file over the defaults."""

    def pick(flag: Any, key: str, default: Any) -> Any:
        return flag if flag is not None else configured.get(key, default)

    defaults = RankOptions()
    return RankOptions(
        rounds=int(pick(args.rounds, "rounds", defaults.rounds)),
        ci=str(pick(args.ci, "ci", defaults.ci)),
        seed=int(pick(args.seed, "seed", defaults.seed)),
        style=not args.no_style and bool(configured.get("style", True)),
        level=float(configured.get("level", defaults.level)),
        anchor=pick(args.anchor, "anchor", None) or None,
        anchor_rating=float(pick(args.anchor_rating, "anchor_rating", defaults.anchor_rating)),
        min_category_votes=int(configured.get("min_category_votes", defaults.min_category_votes)),
        ties=str(pick(args.ties, "ties", defaults.ties)),
        provisional_votes=int(configured.get("provisional_votes", defaults.provisional_votes)),
        outlier_alpha=_alpha(configured.get("outlier_alpha", defaults.outlier_alpha)),
        inverse_propensity=bool(pick(args.inverse_propensity, "inverse_propensity", defaults.inverse_propensity)),
    )


def options_from_config(configured: dict[str, Any]) -> RankOptions:
    """`[ratings]` from the pool file over the defaults (no flags: `arena serve`'s background job)."""
    no_flags = argparse.Namespace(
        rounds=None,
        ci=None,
        seed=None,
        ties=None,
        inverse_propensity=None,
        no_style=False,
        anchor=None,
        anchor_rating=None,
    )
    return options_from(no_flags, configured)


def _alpha(value: Any) -> float | None:
    """`outlier_alpha = 0` (or false) in `[ratings]` turns the voter anomaly test off."""
    return float(value) if value else None


def run(args: argparse.Namespace) -> int:
    settings = Settings()
    options = options_from(args, settings.pool.ratings.given())
    if args.every is not None and args.input is not None:
        raise ValueError("--every watches the database for new votes; it cannot be used with --input")
    if args.input is not None:
        from arena.ratings.files import log_from_file
        from arena.ratings.leaderboard import build_snapshot

        log, excluded = log_from_file(args.input)
        with _progress(options) as progress:
            snapshot = build_snapshot(log, options, excluded=excluded, progress=progress)
        if args.output is not None:
            _deliver(snapshot, args.output, None)
            return 0
    import sqlalchemy.exc

    from arena.db.ready import open_engine
    from arena.db.session import make_sessionmaker

    engine = open_engine(settings.resolved_database_url, unreachable_ok=args.every is not None)
    sessions = make_sessionmaker(engine)
    try:
        if args.input is not None:  # a file's snapshot, stored like the database's
            _deliver(snapshot, None, sessions)
            return 0
        last_seen: tuple[int, int] | None = None
        cache: dict[int, dict[str, Any]] = {}  # style counts of answers already counted
        copies = settings.data_dir / "rank"  # ranking's copy of the votes (`export.vote_copy`)
        while True:
            if _rechecked(sessions, settings):  # a battle newly set aside: rank even with no new vote
                last_seen = None
            if args.every is None:
                _rank_if_new(sessions, options, args.output, last_seen, cache, copies)
                return 0
            try:
                last_seen = _rank_if_new(sessions, options, args.output, last_seen, cache, copies)
            except sqlalchemy.exc.OperationalError as exc:
                # The database went away (restart, fail-over): say so, try again next round.
                print(f"arena rank: database unavailable, retrying in {args.every:.0f} s: {exc.orig}", file=sys.stderr)
            time.sleep(args.every)
    finally:
        engine.dispose()


def _rechecked(sessions: Any, settings: Settings) -> bool:
    """The LLM judge's re-check of the battles the gatekeeper was unsure of, when `[gatekeeper]`
    names a judge (arena/gatekeeper/recheck.py); whether it set any aside."""
    from arena.gatekeeper.recheck import recheck_with_configured_judge

    tally = recheck_with_configured_judge(sessions, settings)
    if tally is None or not tally.asked:
        return False
    print(
        f"arena rank: re-checked {tally.asked - tally.failed} unsure prompts, {tally.not_geographic} not geographic",
        file=sys.stderr,
    )
    return tally.not_geographic > 0


def _rank_if_new(
    sessions: Any,
    options: RankOptions,
    output: Path | None,
    last_seen: tuple[int, int] | None,
    cache: dict[int, dict[str, Any]] | None = None,
    copies: Path | None = None,
) -> tuple[int, int]:
    """Rank unless the votes are exactly those of the last run; returns the
    marker (count, highest id) of the votes seen."""
    from arena.export.db import count_votes
    from arena.ratings.job import attach_anonymity, attach_unsure, log_from_database, screen_and_flag
    from arena.ratings.leaderboard import build_snapshot

    with sessions() as session:
        marker = count_votes(session)
    if marker == last_seen:
        return marker
    with sessions() as session:
        log, excluded = log_from_database(session, cache, copies)
        screening = screen_and_flag(session, log, options)  # writes `outlier_voter` flags
    with _progress(options) as progress:
        snapshot = build_snapshot(log, options, excluded=excluded, progress=progress, screening=screening)
    attach_anonymity(sessions, snapshot)
    attach_unsure(sessions, snapshot)
    _deliver(snapshot, output, sessions)
    return marker


def _deliver(snapshot: dict[str, Any], output: Path | None, sessions: Any) -> None:
    if output is not None:
        output.write_text(json.dumps(snapshot, ensure_ascii=False, indent=1))
        where = str(output)
    else:
        from arena.ratings.snapshot import store_snapshot

        where = f"snapshot #{store_snapshot(sessions, snapshot)}"
    excluded = sum(snapshot["excluded"].values())
    top = ", ".join(f"{r['rank']}. {r['contender']} {r['rating']:.0f}" for r in snapshot["leaderboard"][:3])
    print(f"{where}: {snapshot['votes_used']} votes used, {excluded} excluded; {top or 'no contenders yet'}")


def _progress(options: RankOptions):  # type: ignore[no-untyped-def]
    """A tqdm bar over the bootstrap rounds on a terminal; silence in scripts."""
    if not sys.stderr.isatty() or options.ci != "bootstrap":
        return nullcontext(None)
    from tqdm import tqdm

    total = options.rounds * (2 if options.style else 1)

    class _Bar:
        def __init__(self) -> None:
            self.bar = tqdm(total=total, desc="bootstrap", unit="round", file=sys.stderr, leave=False)

        def __enter__(self):  # type: ignore[no-untyped-def]
            return self

        def __exit__(self, *exc: object) -> None:
            self.bar.close()

        def __call__(self, done: int) -> None:
            if done:
                self.bar.update(done)
            else:
                self.bar.refresh()

    return _Bar()
