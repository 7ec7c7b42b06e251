"""The rating job: votes from the database (or an export file) -> snapshot.

`rank_database` reads every vote from the database as columns
(`export.vote_table`), applies the filters, computes the snapshot and stores
it as a `leaderboard_snapshots` row. `files.log_from_file` does the same reading
for `arena rank --input` (without loading SQLAlchemy); both turn columns
into a log in one place (`ratings.columnar`), the row path is left for
files with a row to refuse.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Text, cast, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from arena.db.tables import Battle, Vote
from arena.ratings.anomaly import Screening
from arena.ratings.files import log_from_file as log_from_file
from arena.ratings.files import log_from_rows as log_from_rows
from arena.ratings.leaderboard import (
    Progress,
    RankOptions,
    build_snapshot,
    screen_log,
)
from arena.ratings.snapshot import latest_snapshot as latest_snapshot
from arena.ratings.snapshot import store_snapshot
from arena.ratings.vote_log import VoteLog

FeatureCounts = dict[int, dict[str, Any]]  # response id -> style counts
OUTLIER_FLAG = "outlier_voter"
OUTLIER_ADDRESS_FLAG = "outlier_address"
# How long an anonymity audit is carried over to the next snapshots: on 2,000 stored answers
# of real length it takes 20-60 CPU-s (TF-IDF and a logistic regression per fold), and
# `arena serve`'s background ranker ranks every half minute while votes arrive.
ANONYMITY_EVERY = timedelta(hours=1)


def rank_database(
    sessions: sessionmaker[Session],
    options: RankOptions,
    *,
    progress: Progress | None = None,
    cache: FeatureCounts | None = None,
    copies: Path | None = None,
) -> dict[str, Any]:
    """Compute a snapshot from every vote and store it; returns the snapshot
    (`copies`: the folder of ranking's copy of the votes, see `log_from_database`)."""
    with sessions() as session:
        log, excluded = log_from_database(session, cache, copies)
        screening = screen_and_flag(session, log, options)
    snapshot = build_snapshot(log, options, excluded=excluded, progress=progress, screening=screening)
    attach_anonymity(sessions, snapshot)
    attach_unsure(sessions, snapshot)
    store_snapshot(sessions, snapshot)
    return snapshot


def attach_unsure(sessions: sessionmaker[Session], snapshot: dict[str, Any]) -> None:
    """How the votes on battles the gatekeeper was unsure of fared: `votes`, those `kept` (no
    re-check said the prompt is not geographic: they count like any other), those `set_aside`
    (counted under `excluded` as `flagged:not_geographic`) and those `not_rechecked`."""
    query = (
        select(Battle.recheck, func.count())
        .join(Vote, Vote.battle_id == Battle.id)
        .where(Battle.unsure.is_(True))
        .group_by(Battle.recheck)
    )
    with sessions() as session:
        counts = {recheck: int(n) for recheck, n in session.execute(query)}
    votes = sum(counts.values())
    set_aside = counts.get("not_geographic", 0)
    snapshot["unsure"] = {
        "votes": votes,
        "kept": votes - set_aside,
        "set_aside": set_aside,
        "not_rechecked": counts.get(None, 0),
    }


def attach_anonymity(
    sessions: sessionmaker[Session], snapshot: dict[str, Any], limit: int = 2000, every: timedelta = ANONYMITY_EVERY
) -> None:
    """The anonymity audit on the newest answers, kept in the snapshot for the
    admin (`/api/admin/anonymity`; the public API leaves it out). The newest stored
    snapshot's audit is carried over while it is younger than `every`: how recognisable
    the contenders are moves slowly, and the audit is the slowest part of a rating run."""
    from arena.audit.anonymity import audit, samples_from_database, summary

    now = datetime.now(UTC)
    with sessions() as session:
        previous = (latest_snapshot(session) or {}).get("anonymity") or {}
        audited_at = previous.get("audited_at")  # None in an audit older than the carry-over
        if audited_at and now - datetime.fromisoformat(audited_at) < every:
            snapshot["anonymity"] = previous
            return
        samples = samples_from_database(session, limit)
    snapshot["anonymity"] = {**summary(audit(samples)), "audited_at": now.isoformat()}


def screen_and_flag(session: Session, log: VoteLog, options: RankOptions) -> Screening | None:
    """Run the anomaly test and write `outlier_voter` into the flags of every
    vote of a flagged voter, and `outlier_address` into those of every vote
    from a flagged address (so the export shows it and later runs exclude
    them). A voter or address flagged once stays flagged: their new votes are
    flagged too, so flooding the board until they look ordinary does not help."""
    screening = screen_log(
        log,
        options,
        already_flagged=flagged_voters(session),
        already_flagged_addresses=flagged_addresses(session),
    )
    if screening is None:
        return screening
    voters = [log.voters[i] for i in screening.voters.flagged]
    _flag_battles(session, Vote.voter_hash, voters, OUTLIER_FLAG)
    if screening.addresses is not None:
        addresses = [log.addresses[i] for i in screening.addresses.flagged]
        _flag_battles(session, Battle.ip_hash, addresses, OUTLIER_ADDRESS_FLAG)
    session.commit()
    return screening


def _flag_battles(session: Session, column: Any, values: list[str], flag: str) -> None:
    """Add `flag` to every voted battle whose `column` (a vote's or a battle's) is in `values`."""
    found: list[tuple[str, list[Any]]] = []
    for start in range(0, len(values), 500):  # bounded IN lists
        found.extend(
            (bid, flags)
            for bid, flags in session.execute(
                select(Battle.id, Battle.flags)
                .join(Vote, Vote.battle_id == Battle.id)
                .where(column.in_(values[start : start + 500]))
            )
        )
    changes = [{"id": bid, "flags": [*(flags or []), flag]} for bid, flags in found if flag not in (flags or [])]
    if changes:
        session.execute(update(Battle), changes)  # bulk update by primary key


def flagged_voters(session: Session) -> set[str]:
    """Voter hashes an earlier run flagged as outliers."""
    # the flagged battles first, then their votes by index: SQLite joined every vote to its
    # battle to test the flag (0.9 s at 1M votes, 0.2 s this way); a literal pattern, as
    # contains() builds it from parts on every row
    flagged = select(Battle.id).where(cast(Battle.flags, Text).like(f'%"{OUTLIER_FLAG}"%'))
    query = select(Vote.voter_hash).where(Vote.battle_id.in_(flagged)).distinct()
    return {h for h in session.scalars(query) if h}


def flagged_addresses(session: Session) -> set[str]:
    """Address hashes an earlier run flagged as outliers."""
    query = select(Battle.ip_hash).where(cast(Battle.flags, Text).like(f'%"{OUTLIER_ADDRESS_FLAG}"%')).distinct()
    return {h for h in session.scalars(query) if h}


def log_from_database(
    session: Session, cache: FeatureCounts | None = None, copies: Path | None = None
) -> tuple[VoteLog, dict[str, int]]:
    """The votes that count, with style features of the final answers: read
    as columns in bulk (`export.vote_table`) and turned into a log exactly as
    an export file's columns are.

    Answers carry their stored style counts; older or imported ones without
    them are counted from the text, the slow part of reading (a few hundred
    microseconds each). `cache` (response id -> counts), kept by
    `arena rank --every`, means that happens once per answer per process.
    With `copies` (a folder), the votes come through ranking's copy of them
    kept there (`export.vote_copy`): only the battles changed since are read."""
    from arena.export.vote_table import read_vote_table
    from arena.ratings.columnar import log_from_trusted_table, release_arrow_memory
    from arena.ratings.metadata import MetadataCounts

    if copies is not None:
        from arena.export.vote_copy import read_votes

        votes, _ = read_votes(session.get_bind(), copies, cache)  # type: ignore[arg-type]
    else:
        votes = read_vote_table(session, cache)
    metadata = MetadataCounts.of_sums(votes.counts["a"], votes.counts["b"])
    found = log_from_trusted_table(votes.table, metadata, address=votes.address)
    release_arrow_memory()
    return found
