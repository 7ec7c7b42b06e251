"""The database's votes as clean_battle columns, in bulk, for `arena rank`.

`read_vote_table(session)` gives the same Arrow table `columnar.read_vote_table`
reads from an export file (`RANK_SCHEMA`, the contract's projection), so the
database and a file rank through one path (`ratings.columnar.log_from_table`).
One SQL statement joins each vote to its battle, both answers and the label,
and takes the style counts out of the stored JSON in the database itself:

* PostgreSQL streams it with `COPY ... TO STDOUT (FORMAT csv)` into Arrow's
  CSV reader, block by block: no Python object per vote;
* SQLite (no COPY) is read with `fetchmany` in blocks turned into Arrow
  columns (sqlite3 makes a tuple per row; nothing more is made of it).

Python work is left for the few rows that need it: answers stored without
style counts (older or imported ones) are counted from their text, once per
process with `cache`, and labelled battles get their distances from
`db.battle_truth`, which rounds them to the label's precision.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.answers.style import style_features
from arena.db.tables import BattleLabel, Response
from arena.export.columnar import RANK_SCHEMA
from arena.export.contract import HEADERS
from arena.export.db import LabelPoint, label_truth
from arena.export.format import CHOICE_TO_WINNER, Truth
from arena.geo.commitment import LEVELS

FeatureCounts = dict[int, dict[str, Any]]  # response id -> style_features counts
BLOCK = 65_536

# (name in conv_metadata with the side left out, JSON path in the stored counts)
COUNTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sum_assistant_tokens", ("tokens",)),
    *((f"header_count.{h}", ("header_count", h)) for h in HEADERS),
    ("list_count.ordered", ("list_count", "ordered")),
    ("list_count.unordered", ("list_count", "unordered")),
    ("bold_count.**", ("bold_count", "**")),
    ("bold_count.__", ("bold_count", "__")),
    ("italic_count.*", ("italic_count", "*")),
    ("italic_count._", ("italic_count", "_")),
    ("gps_count", ("gps_count",)),
)
# result columns before the counts, with their Arrow types
HEAD: tuple[tuple[str, pa.DataType], ...] = (
    ("choice", pa.string()),
    ("judge", pa.string()),
    ("created_at", pa.string()),
    ("model_a", pa.string()),
    ("model_b", pa.string()),
    ("battle_status", pa.string()),
    ("language_code", pa.string()),
    ("categories", pa.string()),
    ("flags", pa.string()),
    ("propensity", pa.float64()),
    ("labelled", pa.int64()),
    *(
        (f"{name}_{side}", kind)
        for side in "ab"
        for name, kind in (
            ("id", pa.int64()),
            ("gate", pa.int64()),
            ("status", pa.string()),
            ("no_style", pa.int64()),
            ("level", pa.string()),
            ("country", pa.string()),
            ("tool_calls", pa.int64()),
        )
    ),
)
TRUTH_COLUMNS = ("error_km_a", "error_km_b", "country", "continent", "label_precision_km")
COLUMN_TYPES = dict(HEAD) | {f"{name}_{side}": pa.int64() for side in "ab" for name, _ in COUNTS}
# SQLite parses a JSON text again for every json_extract: one call per side
# takes every count at once, as the text of a JSON array
SQLITE_TYPES = dict(HEAD) | {f"counts_{side}": pa.string() for side in "ab"}


def read_vote_table(session: Session, cache: FeatureCounts | None = None) -> pa.Table:
    """Every vote as RANK_SCHEMA columns, oldest vote id first."""
    dialect = session.get_bind().dialect.name
    raw = _copy(session, _query(dialect)) if dialect == "postgresql" else _fetch(session, _query(dialect))
    col = {name: raw.column(name).combine_chunks() for name in raw.column_names}
    for side in "ab" if dialect != "postgresql" else ():
        for (name, _), values in zip(COUNTS, _split_counts(col.pop(f"counts_{side}")), strict=True):
            col[f"{name}_{side}"] = values
    if dialect == "postgresql":  # epoch seconds, as COPY writes numbers
        col["created_at"] = pc.cast(col["created_at"], pa.float64())
    else:  # SQLite keeps times as text
        col["created_at"] = _epoch_seconds(col["created_at"])
    _count_unstyled(session, col, {} if cache is None else cache)
    return _rank_table(session, col)


def _query(dialect: str) -> str:
    """The one statement; the JSON extraction is each database's own."""

    def path_of(path: tuple[str, ...]) -> str:
        return f"'$.{'.'.join(json.dumps(p) for p in path)}'"

    def number(alias: str, path: tuple[str, ...]) -> str:
        if dialect == "postgresql":  # s{side}.style: the counts as jsonb, parsed once
            return f"(s{alias[-1]}.style #>> '{{{','.join(path)}}}')::bigint"
        return f"json_extract({alias}.style, {path_of(path)})"

    def text(alias: str, column: str, key: str) -> str:
        if dialect == "postgresql":
            return f"({alias}.{column} ->> '{key}')"
        return f"json_extract({alias}.{column}, '$.{key}')"

    created = "extract(epoch from v.created_at)" if dialect == "postgresql" else "v.created_at"
    sides = []
    for side in "ab":
        r = f"r{side}"
        sides += [
            f"{r}.id",
            f"CASE WHEN {r}.gate THEN 1 ELSE 0 END",
            f"{r}.status",
            # no stored counts (SQL NULL, or JSON null as a Core insert writes None):
            # 1, or 2 when there is no text either (FastChat's rows)
            f"CASE WHEN {r}.id IS NULL OR CAST({r}.style AS TEXT) <> 'null' THEN 0 "
            f"WHEN {r}.text = '' THEN 2 ELSE 1 END",
            text(r, "commitment", "level"),
            text(r, "commitment", "country"),
            # as stored with the counts, else the length of the trajectory (as `db.Side.counts`)
            f"COALESCE({number(r, ('tool_calls',))}, json_array_length({r}.trajectory), 0)",
        ]
    if dialect == "postgresql":
        counts = [number(f"r{side}", path) for side in "ab" for _, path in COUNTS]
    else:
        counts = [f"json_extract(r{side}.style, {', '.join(path_of(p) for _, p in COUNTS)})" for side in "ab"]
    columns = [
        "v.choice",
        "v.voter_hash",
        created,
        "b.model_a",
        "b.model_b",
        "b.status",
        "b.language",
        "b.categories",
        "b.flags",
        "b.propensity",
        "CASE WHEN l.battle_id IS NULL THEN 0 ELSE 1 END",
        *sides,
        *counts,
    ]
    return (
        f"SELECT {', '.join(columns)} FROM votes v JOIN battles b ON b.id = v.battle_id "
        "LEFT JOIN responses ra ON ra.battle_id = b.id AND ra.side = 'a' "
        "LEFT JOIN responses rb ON rb.battle_id = b.id AND rb.side = 'b' "
        + (
            # OFFSET 0 keeps the planner from copying the cast into every extraction
            "LEFT JOIN LATERAL (SELECT ra.style::jsonb AS style OFFSET 0) sa ON true "
            "LEFT JOIN LATERAL (SELECT rb.style::jsonb AS style OFFSET 0) sb ON true "
            if dialect == "postgresql"
            else ""
        )
        + "LEFT JOIN battle_labels l ON l.battle_id = b.id ORDER BY v.id"
    )


def _copy(session: Session, query: str) -> pa.Table:
    """PostgreSQL: COPY the result out as CSV, straight into Arrow's streaming CSV reader."""
    from pyarrow import csv as pa_csv

    cursor = session.connection().connection.driver_connection.cursor()  # type: ignore[union-attr]
    with cursor.copy(f"COPY ({query}) TO STDOUT (FORMAT csv)") as copy:
        chunks = (bytes(chunk) for chunk in copy)
        first = next(chunks, None)
        if first is None:  # no votes: Arrow's reader refuses an empty file
            return _empty()
        reader = pa_csv.open_csv(
            _Stream(itertools.chain([first], chunks)),
            read_options=pa_csv.ReadOptions(column_names=list(COLUMN_TYPES), block_size=1 << 24),
            # COPY writes NULL as an empty cell and an empty string as ""
            convert_options=pa_csv.ConvertOptions(
                column_types=COLUMN_TYPES, strings_can_be_null=True, quoted_strings_can_be_null=False
            ),
        )
        return reader.read_all()


def _empty() -> pa.Table:
    return pa.table({name: pa.array([], kind) for name, kind in COLUMN_TYPES.items()})


class _Stream(io.RawIOBase):
    """A readable file over an iterator of byte chunks."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        # fill the whole buffer: COPY hands over a row at a time, and a short
        # read per row would cost Arrow one call (and one buffer) per vote
        view = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(view):
            if not self.pending:
                chunk = next(self.chunks, None)
                if chunk is None:
                    break
                self.pending = memoryview(chunk)
            size = min(len(view) - filled, len(self.pending))
            view[filled : filled + size] = self.pending[:size]
            self.pending = self.pending[size:]
            filled += size
        return filled


def _fetch(session: Session, query: str) -> pa.Table:
    """SQLite: blocks of rows, each turned column by column into Arrow arrays."""
    cursor = session.connection().connection.driver_connection.cursor()  # type: ignore[union-attr]
    cursor.execute(query)
    names, types = list(SQLITE_TYPES), list(SQLITE_TYPES.values())
    batches = []
    while rows := cursor.fetchmany(BLOCK):
        arrays = [pa.array(values, kind) for values, kind in zip(zip(*rows, strict=True), types, strict=True)]
        batches.append(pa.RecordBatch.from_arrays(arrays, names=names))
    cursor.close()
    if not batches:
        return pa.table({name: pa.array([], kind) for name, kind in SQLITE_TYPES.items()})
    return pa.Table.from_batches(batches)


def _split_counts(cells: pa.Array) -> list[pa.Array]:
    """'[350,2,null,...]' per row -> one int64 array per entry of COUNTS (null: no count)."""
    width = len(COUNTS)
    filled = pc.fill_null(cells, "[" + ",".join(["null"] * width) + "]")
    parts = pc.list_flatten(pc.split_pattern(pc.utf8_slice_codeunits(filled, 1, -1), ","))
    if len(parts) != width * len(cells):
        raise ValueError("a stored style count that is not a number")
    numbers = pc.cast(pc.if_else(pc.equal(parts, "null"), pa.scalar(None, pa.string()), parts), pa.float64())
    return [pc.cast(numbers.take(pa.array(np.arange(k, len(parts), width))), pa.int64()) for k in range(width)]


def _epoch_seconds(text: pa.Array) -> pa.Array:
    """SQLite's stored times ("2026-01-01 00:00:00.000000", UTC) as seconds since 1970."""
    micros = pc.cast(pc.cast(text, pa.timestamp("us")), pa.int64())
    return pc.divide(pc.cast(micros, pa.float64()), 1e6)


def _count_unstyled(session: Session, col: dict[str, pa.Array], cache: FeatureCounts) -> None:
    """Answers stored without style counts, counted from their text (once per answer with `cache`)."""
    empty = style_features("")
    for side in "ab":
        unstyled = col[f"no_style_{side}"].to_numpy(zero_copy_only=False)
        rows, blank = np.flatnonzero(unstyled == 1), np.flatnonzero(unstyled == 2)
        if not rows.size and not blank.size:
            continue
        ids = col[f"id_{side}"].take(pa.array(rows)).to_pylist()
        missing = [i for i in ids if i not in cache]
        for start in range(0, len(missing), 500):  # bounded IN lists
            part = missing[start : start + 500]
            for rid, text in session.execute(select(Response.id, Response.text).where(Response.id.in_(part))):
                cache[rid] = style_features(text or "")
        for name, path in COUNTS:
            values = col[f"{name}_{side}"].to_numpy(zero_copy_only=False).astype(np.float64)
            values[rows] = [_dig(cache[i], path) for i in ids]
            values[blank] = _dig(empty, path)
            col[f"{name}_{side}"] = pa.array(values, mask=np.isnan(values)).cast(pa.int64())


def _dig(counts: dict[str, Any], path: tuple[str, ...]) -> float:
    value: Any = counts
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return float("nan") if value is None else float(value)


def _rank_table(session: Session, col: dict[str, pa.Array]) -> pa.Table:
    """The RANK_SCHEMA columns, as `db.export_vote` and `format.to_row` would write them."""
    rows = len(col["choice"])
    none = pa.scalar(None, pa.string())
    done = [pc.fill_null(pc.equal(col[f"status_{side}"], "done"), False) for side in "ab"]
    out: dict[str, pa.Array] = {
        "model_a": col["model_a"],
        "model_b": col["model_b"],
        "winner": _winner(col["choice"]),
        "judge": col["judge"],
        "anony": pa.nulls(rows, pa.bool_()),  # a vote cast with names shown carries the flag already
        "language": pa.nulls(rows, pa.string()),
        "tstamp": col["created_at"],
        "conv_metadata": _metadata(col),
        "language_code": col["language_code"],
        "gps_count_a": pc.fill_null(col["gps_count_a"], 0),
        "gps_count_b": pc.fill_null(col["gps_count_b"], 0),
        "tool_calls_a": pc.fill_null(col["tool_calls_a"], 0),
        "tool_calls_b": pc.fill_null(col["tool_calls_b"], 0),
        "gate_a": pc.equal(pc.fill_null(col["gate_a"], 0), 1),
        "gate_b": pc.equal(pc.fill_null(col["gate_b"], 0), 1),
        "categories": _string_lists(col["categories"]),
        "flags": _string_lists(col["flags"]),
        "battle_status": col["battle_status"],
        "sides_done": pc.and_(done[0], done[1]),
        "propensity": col["propensity"],
    }
    for side in "ab":
        # Commitment.from_json: a commitment counts only at a known level
        known = pc.fill_null(pc.is_in(col[f"level_{side}"], value_set=pa.array(list(LEVELS))), False)
        out[f"answer_country_{side}"] = pc.if_else(known, pc.fill_null(col[f"country_{side}"], ""), none)
    out.update(_truth(session, col))
    return pa.Table.from_arrays([out[f.name] for f in RANK_SCHEMA], schema=RANK_SCHEMA)


def _winner(choice: pa.Array) -> pa.Array:
    choices = list(CHOICE_TO_WINNER)
    index = pc.index_in(choice, value_set=pa.array(choices))
    return pa.DictionaryArray.from_arrays(index, pa.array([CHOICE_TO_WINNER[c] for c in choices])).cast(pa.string())


def _metadata(col: dict[str, pa.Array]) -> pa.StructArray:
    kind = RANK_SCHEMA.field("conv_metadata").type
    children = []
    for field in kind:
        if pa.types.is_struct(field.type):  # header_count_a: {h1: ..., h6: ...}
            group, side = field.name.rsplit("_", 1)
            parts = [pc.fill_null(col[f"{group}.{key.name}_{side}"], 0) for key in field.type]
            children.append(pa.StructArray.from_arrays(parts, fields=list(field.type)))
        else:  # sum_assistant_a_tokens
            side = field.name.removeprefix("sum_assistant_")[0]
            children.append(pc.fill_null(col[f"sum_assistant_tokens_{side}"], 0))
    return pa.StructArray.from_arrays(children, fields=list(kind))


def _string_lists(cells: pa.Array) -> pa.Array:
    """JSON list cells ("[]", '["landmark"]') as lists of strings, parsed once per distinct cell."""
    encoded = pc.dictionary_encode(pc.fill_null(cells, "[]"))
    lists = [[str(v) for v in json.loads(cell or "[]") or []] for cell in encoded.dictionary.to_pylist()]
    return pa.array(lists, pa.list_(pa.string())).take(encoded.indices)


def _truth(session: Session, col: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """The accuracy columns: distances and the label's country/continent on the (few) labelled battles."""
    rows = len(col["choice"])
    truth: dict[str, list[Any]] = {name: [None] * rows for name in TRUTH_COLUMNS}
    labelled = np.flatnonzero(col["labelled"].to_numpy(zero_copy_only=False) == 1)
    ids = {side: col[f"id_{side}"].take(pa.array(labelled)).to_pylist() for side in "ab"}
    for start in range(0, labelled.size, 500):  # bounded IN lists
        part = slice(start, start + 500)
        found = _labelled_battles(session, ids["a"][part], ids["b"][part])
        for row, item in zip(labelled[part], found, strict=True):
            for name in TRUTH_COLUMNS:
                truth[name][row] = getattr(item, name)
    text = ("country", "continent")
    return {name: pa.array(values, pa.string() if name in text else pa.float64()) for name, values in truth.items()}


def _labelled_battles(session: Session, ids_a: list[int | None], ids_b: list[int | None]) -> list[Truth]:
    """`db.label_truth` of each labelled battle, from both answers' commitments and its label."""
    wanted = [i for i in ids_a + ids_b if i is not None]
    sides = {
        rid: (battle_id, commitment)
        for rid, battle_id, commitment in session.execute(
            select(Response.id, Response.battle_id, Response.commitment).where(Response.id.in_(wanted))
        )
    }
    labels = {
        battle_id: LabelPoint(lat, lon, precision, country, continent)
        for battle_id, lat, lon, precision, country, continent in session.execute(
            select(
                BattleLabel.battle_id,
                BattleLabel.lat,
                BattleLabel.lon,
                BattleLabel.precision_km,
                BattleLabel.country,
                BattleLabel.continent,
            ).where(BattleLabel.battle_id.in_({sides[i][0] for i in wanted}))
        )
    }
    found = []
    for a, b in zip(ids_a, ids_b, strict=True):
        battle = sides[a][0] if a is not None else sides[b][0] if b is not None else None
        commitment_a = sides[a][1] if a is not None else None
        commitment_b = sides[b][1] if b is not None else None
        found.append(label_truth(commitment_a, commitment_b, labels.get(battle) if battle else None))
    return found
