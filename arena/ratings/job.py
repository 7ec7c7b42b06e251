"""The rating job: votes from the database (or an export file) -> snapshot.

`rank_database` reads every vote from the database as columns
(`export.vote_table`), applies the filters, computes the snapshot and stores
it as a `leaderboard_snapshots` row. `log_from_file` does the same reading
for `arena rank --input`; both turn columns into a log in one place
(`ratings.columnar`), the row path is left for files with a row to refuse.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sqlalchemy import Text, cast, select, update
from sqlalchemy.orm import Session, sessionmaker

from arena.db.tables import Battle, Vote
from arena.export.format import (
    WINNERS,
    FormatError,
    Truth,
    row_features,
    row_flags,
    row_truth,
    validate_row,
)
from arena.export.readers import iter_rows
from arena.ratings.accuracy import LabelledVote
from arena.ratings.anomaly import VoterScreening
from arena.ratings.filters import CHOICE_OUTCOME, ExclusionCounter, exclusion_reason
from arena.ratings.leaderboard import (
    Progress,
    RankOptions,
    VoteLog,
    VoteLogBuilder,
    build_snapshot,
    screen_log,
)
from arena.ratings.regions import region_categories
from arena.ratings.snapshot import latest_snapshot as latest_snapshot
from arena.ratings.snapshot import store_snapshot

FeatureCounts = dict[int, dict[str, Any]]  # response id -> style counts
OUTLIER_FLAG = "outlier_voter"


def rank_database(
    sessions: sessionmaker[Session],
    options: RankOptions,
    *,
    progress: Progress | None = None,
    cache: FeatureCounts | None = None,
) -> dict[str, Any]:
    """Compute a snapshot from every vote and store it; returns the snapshot."""
    with sessions() as session:
        log, excluded = log_from_database(session, cache)
        screening = screen_and_flag(session, log, options)
    snapshot = build_snapshot(log, options, excluded=excluded, progress=progress, screening=screening)
    attach_anonymity(sessions, snapshot)
    store_snapshot(sessions, snapshot)
    return snapshot


def attach_anonymity(sessions: sessionmaker[Session], snapshot: dict[str, Any], limit: int = 2000) -> None:
    """The anonymity audit on the newest answers, kept in the snapshot for the
    admin (`/api/admin/anonymity`; the public API leaves it out)."""
    from arena.audit.anonymity import audit, samples_from_database, summary

    with sessions() as session:
        samples = samples_from_database(session, limit)
    snapshot["anonymity"] = summary(audit(samples))


def screen_and_flag(session: Session, log: VoteLog, options: RankOptions) -> VoterScreening | None:
    """Run the voter anomaly test and write `outlier_voter` into the flags of
    every vote of a flagged voter (so the export shows it and later runs
    exclude them). A voter flagged once stays flagged: their new votes are
    flagged too, so flooding the board until they look ordinary does not help."""
    screening = screen_log(log, options, already_flagged=flagged_voters(session))
    if screening is None or not screening.flagged.size:
        return screening
    hashes = [log.voters[i] for i in screening.flagged]
    found: list[tuple[str, list[Any]]] = []
    for start in range(0, len(hashes), 500):  # bounded IN lists
        found.extend(
            (bid, flags)
            for bid, flags in session.execute(
                select(Battle.id, Battle.flags)
                .join(Vote, Vote.battle_id == Battle.id)
                .where(Vote.voter_hash.in_(hashes[start : start + 500]))
            )
        )
    changes = [
        {"id": bid, "flags": [*(flags or []), OUTLIER_FLAG]}
        for bid, flags in found
        if OUTLIER_FLAG not in (flags or [])
    ]
    if changes:
        session.execute(update(Battle), changes)  # bulk update by primary key
    session.commit()
    return screening


def flagged_voters(session: Session) -> set[str]:
    """Voter hashes an earlier run flagged as outliers."""
    query = (
        select(Vote.voter_hash)
        .join(Battle, Vote.battle_id == Battle.id)
        .where(cast(Battle.flags, Text).contains(f'"{OUTLIER_FLAG}"'))
        .distinct()
    )
    return {h for h in session.scalars(query) if h}


def log_from_database(session: Session, cache: FeatureCounts | None = None) -> tuple[VoteLog, dict[str, int]]:
    """The votes that count, with style features of the final answers: read
    as columns in bulk (`export.vote_table`) and turned into a log exactly as
    an export file's columns are.

    Answers carry their stored style counts; older or imported ones without
    them are counted from the text, the slow part of reading (a few hundred
    microseconds each). `cache` (response id -> counts), kept by
    `arena rank --every`, means that happens once per answer per process."""
    from arena.export.vote_table import read_vote_table
    from arena.ratings.columnar import log_from_trusted_table

    return log_from_trusted_table(read_vote_table(session, cache))


def log_from_file(path: Path) -> tuple[VoteLog, dict[str, int]]:
    """Votes from an export file (ours or FastChat's clean_battle); every bad
    row is reported with its line number and nothing is ranked.

    Parquet, JSONL and CSV are read as columns first (only those ranking
    uses, no Python object per vote); a file that needs more (a bad row to
    name, labelled battles) is read row by row."""
    from arena.export.columnar import read_vote_table
    from arena.ratings.columnar import log_from_table

    table = read_vote_table(path) if path.exists() else None
    found = log_from_table(table) if table is not None else None
    if found is not None:
        return found
    return log_from_rows(iter_rows(path))


def log_from_rows(rows: Iterable[tuple[str, Any]]) -> tuple[VoteLog, dict[str, int]]:
    builder = VoteLogBuilder()
    excluded = ExclusionCounter()
    errors: list[str] = []
    for where, row in rows:
        problems = [str(row)] if isinstance(row, Exception) else validate_row(row)
        if problems:
            errors.extend(f"{where}: {p}" for p in problems)
            continue
        if errors:
            continue  # keep validating, stop building
        reason = exclusion_reason(
            model_a=row["model_a"],
            model_b=row["model_b"],
            choice=WINNERS[row["winner"]],
            battle_status=row.get("battle_status"),
            flags=row_flags(row),
            sides_done=row.get("sides_done") is not False,
        )
        if reason:
            excluded[reason] += 1
            continue
        features = row_features(row)
        builder.add(
            row["model_a"],
            row["model_b"],
            CHOICE_OUTCOME[WINNERS[row["winner"]]],
            features_a=features[0] if features else None,
            features_b=features[1] if features else None,
            tstamp=float(row.get("tstamp") or 0.0),
            gate_a=bool(row.get("gate_a")),
            gate_b=bool(row.get("gate_b")),
            language=row.get("language_code") or _fastchat_language(row.get("language")),
            categories=row.get("categories") or [],
            voter=str(row.get("judge") or ""),
            **_accuracy(row["model_a"], row["model_b"], CHOICE_OUTCOME[WINNERS[row["winner"]]], row_truth(row)),
            propensity=row.get("propensity"),
        )
    if errors:
        raise FormatError(errors)
    return builder.build(), excluded.as_dict()


def _accuracy(model_a: str, model_b: str, outcome: float, truth: Truth) -> dict[str, Any]:
    """The region categories of a vote and, on a labelled battle, its accuracy record."""
    regions = region_categories(
        label_country=truth.country,
        label_continent=truth.continent,
        answer_country_a=truth.answer_country_a,
        answer_country_b=truth.answer_country_b,
    )
    if not truth.continent:
        return {"regions": regions, "labelled": None}

    def hit(answer_country: str | None) -> bool | None:
        return None if answer_country is None or truth.country is None else answer_country == truth.country

    labelled = LabelledVote(
        model_a,
        model_b,
        outcome,
        truth.error_km_a,
        truth.error_km_b,
        hit(truth.answer_country_a),
        hit(truth.answer_country_b),
        truth.country,
        truth.label_precision_km or 0.0,
    )
    return {"regions": regions, "labelled": labelled}


def _fastchat_language(name: Any) -> str | None:
    """FastChat writes language names ("English"); keep them as the category name."""
    if not isinstance(name, str) or not name or name == "unknown":
        return None
    return name
