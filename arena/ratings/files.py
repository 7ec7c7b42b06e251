"""Votes from an export file for `arena rank --input` (no database, and no
SQLAlchemy loaded: the command's start-up is part of what a user waits for).

`log_from_file` reads the columns ranking needs (`ratings.columnar`); a file
with a row to refuse, or one that is not columnar, goes row by row through
`log_from_rows`, which names every bad row.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

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
from arena.ratings.filters import CHOICE_OUTCOME, ExclusionCounter, exclusion_reason
from arena.ratings.regions import region_categories
from arena.ratings.vote_log import VoteLog, VoteLogBuilder


def log_from_file(path: Path) -> tuple[VoteLog, dict[str, int]]:
    """Votes from an export file (ours or FastChat's clean_battle); every bad
    row is reported with its line number and nothing is ranked.

    Parquet, JSONL and CSV are read as columns first (only those ranking
    uses, no Python object per vote); a file that needs more (a bad row to
    name, labelled battles) is read row by row."""
    import pyarrow as pa

    from arena.export.columnar import metadata_row_groups, read_vote_table
    from arena.ratings.columnar import log_from_columns, release_arrow_memory
    from arena.ratings.metadata import MetadataCounts

    found = None
    # a Parquet file's conv_metadata (26 integer columns) is summed a row group at a time
    exists = path.exists()
    row_groups = metadata_row_groups(path) if exists else None
    table = read_vote_table(path, for_ranking=True) if exists else None
    if table is not None:
        try:
            metadata = MetadataCounts.joined(row_groups) if row_groups is not None else None
        except (pa.ArrowException, OSError, ValueError, KeyError, TypeError):
            metadata = MetadataCounts(None, None, valid=False)  # the row path says what is wrong
        columns = dict(zip(table.column_names, table.columns, strict=True))
        del table  # the log takes the columns one by one, and lets each go
        found = log_from_columns(columns, metadata)
    release_arrow_memory()
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
