"""The database's votes as clean_battle columns, in bulk, for `arena rank`.

`read_vote_table(session)` gives the Arrow table `columnar.read_vote_table`
reads from an export file (`RANK_SCHEMA`, the contract's projection), so the
database and a file rank through one path (`ratings.columnar.log_from_table`),
and beside it each side's style counts, as the integer columns the answers
are stored with (`db.tables.style_columns`: the sums the style fit uses, so
conv_metadata's two dozen counts are left out). One SQL statement joins each
vote to its battle, both answers and the label; it parses no style JSON:

* PostgreSQL streams it with `COPY ... TO STDOUT (FORMAT csv)` into Arrow's
  CSV reader, block by block: no Python object per vote;
* SQLite (no COPY) is read with `fetchmany` in blocks turned into Arrow
  columns (sqlite3 makes a tuple per row; nothing more is made of it).

Python work is left for the few rows that need it: answers stored without
style counts (older or imported ones) are counted from their text, once per
process with `cache`, answers whose counts are in the JSON only (written by
code older than the columns) are read from it, and labelled battles get their
distances from `db.battle_truth`, measured from the label's public cell.

With `battles`, only those battles' votes are read, by ordinary statements:
ranking's copy of the votes (`vote_copy`) reads so the battles changed since
it was written, and each row says whose vote it is (`vote_id`, `battle_id`).
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import bindparam, select, text
from sqlalchemy.orm import Session

from arena.answers.style import style_features
from arena.db.tables import BattleLabel, Response, style_columns
from arena.export.columnar import RANK_SCHEMA
from arena.export.db import LabelPoint, label_truth
from arena.export.format import CHOICE_TO_WINNER, Truth
from arena.geo.commitment import LEVELS

FeatureCounts = dict[int, dict[str, Any]]  # response id -> style counts (style_features' or as stored)
BLOCK = 65_536

# each side's stored counts: the style fit's length, list, header and emphasis features, in that order
COUNTS = ("style_tokens", "style_list_items", "style_headers", "style_emphasis")
# result columns, with their Arrow types
COLUMN_TYPES: dict[str, pa.DataType] = {
    "vote_id": pa.int64(),
    "battle_id": pa.string(),
    "choice": pa.string(),
    "judge": pa.string(),
    "address": pa.string(),
    "created_at": pa.string(),
    "model_a": pa.string(),
    "model_b": pa.string(),
    "battle_status": pa.string(),
    "language_code": pa.string(),
    "categories": pa.string(),
    "flags": pa.string(),
    "propensity": pa.float64(),
    "labelled": pa.int64(),
    "sides_done": pa.int64(),
    **{
        f"{name}_{side}": kind
        for side in "ab"
        for name, kind in (
            ("id", pa.int64()),
            ("gate", pa.int64()),
            ("no_style", pa.int64()),
            ("answer_country", pa.string()),
            ("tool_calls", pa.int64()),
            *((name, pa.int64()) for name in (*COUNTS, "style_gps")),
        )
    },
}
TRUTH_COLUMNS = ("error_km_a", "error_km_b", "country", "continent", "label_precision_km")
# no_style: how a side's counts are stored
STORED, FROM_TEXT, BLANK, JSON_ONLY = 0, 1, 2, 3


@dataclass(frozen=True)
class DatabaseVotes:
    """`table`: RANK_SCHEMA columns with conv_metadata left null; `counts`:
    per side the COUNTS columns of every vote (a missing answer's are 0);
    `vote_id` and `battle_id`: whose vote each row is; `address`: the HMAC of
    the address that started its battle, for the rating job's anomaly test
    (never an export's column)."""

    table: pa.Table
    counts: dict[str, list[np.ndarray]]
    vote_id: pa.Array
    battle_id: pa.Array
    address: pa.Array


def read_vote_table(
    session: Session, cache: FeatureCounts | None = None, *, battles: list[str] | None = None
) -> DatabaseVotes:
    """Every vote as RANK_SCHEMA columns and style counts, oldest vote id first;
    with `battles`, only the votes of those battles (a few, read row by row)."""
    postgresql = session.get_bind().dialect.name == "postgresql"
    if battles is not None:
        raw = _rows(session, battles)
    else:
        raw = _copy(session) if postgresql else _fetch(session)
    col = {name: raw.column(name).combine_chunks() for name in raw.column_names}
    if postgresql:  # epoch seconds, as COPY writes numbers
        col["created_at"] = pc.cast(col["created_at"], pa.float64())
    else:  # SQLite keeps times as text
        col["created_at"] = _epoch_seconds(col["created_at"])
    _count_unstored(session, col, {} if cache is None else cache)
    counts = {
        side: [pc.fill_null(col[f"{name}_{side}"], 0).to_numpy(zero_copy_only=False) for name in COUNTS]
        for side in "ab"
    }
    return DatabaseVotes(_rank_table(session, col), counts, col["vote_id"], col["battle_id"], col["address"])


FROM = (
    "FROM votes v JOIN battles b ON b.id = v.battle_id "
    "LEFT JOIN responses ra ON ra.battle_id = b.id AND ra.side = 'a' "
    "LEFT JOIN responses rb ON rb.battle_id = b.id AND rb.side = 'b' "
    "LEFT JOIN battle_labels l ON l.battle_id = b.id"
)
FROM_UNLABELLED = FROM.removesuffix(" LEFT JOIN battle_labels l ON l.battle_id = b.id")


def _select(dialect: str) -> dict[str, str]:
    """The SQL of each COLUMN_TYPES column; commitments are JSON, read in each database's words."""

    def json_text(alias: str, column: str, key: str) -> str:
        if dialect == "postgresql":
            return f"({alias}.{column} ->> '{key}')"
        return f"json_extract({alias}.{column}, '$.{key}')"

    columns = {
        "vote_id": "v.id",
        "battle_id": "b.id",
        "choice": "v.choice",
        "judge": "v.voter_hash",
        "address": "b.ip_hash",
        "created_at": "extract(epoch from v.created_at)" if dialect == "postgresql" else "v.created_at",
        "model_a": "b.model_a",
        "model_b": "b.model_b",
        "battle_status": "b.status",
        "language_code": "b.language",
        # as text, as COPY writes JSON (a driver would parse it for a row-by-row read)
        "categories": "CAST(b.categories AS TEXT)" if dialect == "postgresql" else "b.categories",
        "flags": "CAST(b.flags AS TEXT)" if dialect == "postgresql" else "b.flags",
        "propensity": "b.propensity",
        "labelled": "CASE WHEN l.battle_id IS NULL THEN 0 ELSE 1 END",
        "sides_done": "CASE WHEN ra.status = 'done' AND rb.status = 'done' THEN 1 ELSE 0 END",
    }
    levels = ", ".join(f"'{level}'" for level in LEVELS)
    for side in "ab":
        r = f"r{side}"
        columns |= {
            f"id_{side}": f"{r}.id",
            f"gate_{side}": f"CASE WHEN {r}.gate THEN 1 ELSE 0 END",
            # JSON null is no counts, as SQL NULL is (a Core insert writes None as JSON null);
            # the JSON is looked at only where the columns are empty
            f"no_style_{side}": f"CASE WHEN {r}.id IS NULL OR {r}.style_tokens IS NOT NULL THEN {STORED} "
            f"WHEN CAST({r}.style AS TEXT) <> 'null' THEN {JSON_ONLY} "
            f"WHEN {r}.text = '' THEN {BLANK} ELSE {FROM_TEXT} END",
            # Commitment.from_json: a commitment counts only at a known level
            f"answer_country_{side}": f"CASE WHEN {json_text(r, 'commitment', 'level')} IN ({levels}) "
            f"THEN COALESCE({json_text(r, 'commitment', 'country')}, '') END",
            # as stored with the counts, else the length of the trajectory (as `db.Side.counts`)
            f"tool_calls_{side}": f"COALESCE({r}.style_tool_calls, json_array_length({r}.trajectory), 0)",
            **{f"{name}_{side}": f"{r}.{name}" for name in (*COUNTS, "style_gps")},
        }
    assert list(columns) == list(COLUMN_TYPES)
    return columns


def _copy(session: Session) -> pa.Table:
    """PostgreSQL: COPY the result out as CSV, straight into Arrow's streaming CSV reader."""
    from pyarrow import csv as pa_csv

    query = f"SELECT {', '.join(_select('postgresql').values())} {FROM} ORDER BY v.id"
    # compiling this one scan of every vote costs more than it saves
    session.execute(text("SET LOCAL jit = off"))
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


def _rows(session: Session, battles: list[str]) -> pa.Table:
    """The votes of `battles`, by ordinary statements (bounded IN lists), oldest vote id first."""
    dialect = session.get_bind().dialect.name
    columns = _select(dialect)
    query = text(f"SELECT {', '.join(columns.values())} {FROM} WHERE b.id IN :battles").bindparams(
        bindparam("battles", expanding=True)
    )
    found: list[Any] = []
    for start in range(0, len(battles), 500):
        found += session.execute(query, {"battles": battles[start : start + 500]}).all()
    found.sort(key=lambda row: row[0])  # the vote id
    values: dict[str, tuple[Any, ...]] = dict(zip(columns, zip(*found, strict=True), strict=True)) if found else {}
    values = {name: values.get(name, ()) for name in columns}
    if dialect == "postgresql":  # epoch seconds as COPY writes them, for the same cast
        values["created_at"] = tuple(str(v) for v in values["created_at"])
    return pa.table({name: pa.array(values[name], kind) for name, kind in COLUMN_TYPES.items()})


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


# SQLite's small flags, packed into one number per vote: (column, bits), lowest bits first
PACKED = (("gate_a", 1), ("gate_b", 1), ("sides_done", 1), ("no_style_a", 2), ("no_style_b", 2))
# SQLite's lines: the vote id, the packed flags, then every other column but
# the propensity (printf would round it) and `labelled` (both read apart, for the few votes they concern)
LINE_TYPES = {"vote_id": pa.int64(), "packed": pa.int64()} | {
    name: kind for name, kind in COLUMN_TYPES.items() if name not in ("propensity", "labelled", *dict(PACKED))
}


def _packed(columns: dict[str, str]) -> str:
    """The SQL of the packed flags: each a small non-null integer, shifted into its bits."""
    terms, shift = [], 0
    for name, bits in PACKED:
        terms.append(f"(({columns[name]}) << {shift})")
        shift += bits
    return " | ".join(terms)


def _unpack(packed: pa.Array) -> dict[str, pa.Array]:
    values, shift, out = packed.to_numpy(), 0, {}
    for name, bits in PACKED:
        out[name] = pa.array((values >> shift) & ((1 << bits) - 1))
        shift += bits
    return out


def _fetch(session: Session) -> pa.Table:
    """SQLite (no COPY): a block of votes at a time as one CSV text, made by
    the database (a printf line per vote, joined by group_concat), into
    Arrow's CSV reader: one Python string per block, none per vote."""
    from pyarrow import csv as pa_csv

    columns = _select("sqlite")
    columns["packed"] = _packed(columns)
    # %Q quotes text as SQL does ('it''s', NULL bare), %s leaves a NULL number empty
    line = ", ".join(columns[name] for name in LINE_TYPES)
    marks = ",".join("%Q" if pa.types.is_string(kind) else "%s" for kind in LINE_TYPES.values())
    query = (
        "SELECT group_concat(line, char(10)), max(id), count(*) FROM ("
        f"SELECT printf('{marks}', {line}) AS line, v.id AS id {FROM_UNLABELLED} WHERE v.id > ? ORDER BY v.id LIMIT {BLOCK})"
    )
    options = {
        "read_options": pa_csv.ReadOptions(column_names=list(LINE_TYPES), use_threads=False),
        "convert_options": pa_csv.ConvertOptions(
            column_types=LINE_TYPES,
            null_values=["", "NULL"],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    }
    # a value may hold a newline (a judge's or a contender's name); Arrow parses
    # lines 2.5x slower when it must look for them, so only blocks that have one do
    parse = {
        newlines: pa_csv.ParseOptions(quote_char="'", double_quote=True, newlines_in_values=newlines)
        for newlines in (False, True)
    }
    connection = session.connection().connection.driver_connection
    blocks, last = [], -(2**63)
    while True:
        found, top, rows = connection.execute(query, (last,)).fetchone()  # type: ignore[union-attr]
        if found is None:
            break
        newlines = found.count("\n") != rows - 1
        blocks.append(pa_csv.read_csv(io.BytesIO(found.encode()), parse_options=parse[newlines], **options))
        last = top
    if not blocks:
        return _empty()
    table = pa.concat_tables(blocks)
    ids = table.column("vote_id").to_numpy()
    if ids.size > 1 and not bool((ids[1:] > ids[:-1]).all()):  # group_concat promises no order
        table = table.take(pc.sort_indices(table.column("vote_id")))
        ids = table.column("vote_id").to_numpy()
    for name, values in _unpack(table.column("packed").combine_chunks()).items():
        table = table.append_column(name, values)
    table = table.append_column("labelled", _labelled(connection, ids))
    return table.drop_columns(["packed"]).append_column("propensity", _propensities(connection, ids))


def _labelled(connection: Any, ids: np.ndarray) -> pa.Array:
    """1 where the vote's battle has a label, in the order of `ids`."""
    query = "SELECT v.id FROM battle_labels l JOIN votes v ON v.battle_id = l.battle_id WHERE v.id <= ?"
    vote = np.array([row[0] for row in connection.execute(query, (int(ids[-1]),))], dtype=np.int64)
    at = np.searchsorted(ids, vote)
    read = at < ids.size
    read[read] = ids[at[read]] == vote[read]
    values = np.zeros(ids.size, dtype=np.int64)
    values[at[read]] = 1
    return pa.array(values)


def _propensities(connection: Any, ids: np.ndarray) -> pa.Array:
    """Each vote's battle propensity, read as the float it is, in the order of `ids`
    (votes cast since the blocks were read are not among them)."""
    values = np.full(ids.size, np.nan)
    # battles first (CROSS JOIN keeps SQLite's order): a scan finds the few with a propensity,
    # then their votes by index, instead of a battle lookup for every vote
    query = (
        "SELECT v.id, b.propensity FROM battles b CROSS JOIN votes v ON v.battle_id = b.id "
        "WHERE b.propensity IS NOT NULL AND v.id <= ?"
    )
    found = connection.execute(query, (int(ids[-1]),)).fetchall()
    if found:
        vote, propensity = (np.array(c) for c in zip(*found, strict=True))
        at = np.searchsorted(ids, vote)
        read = ids[at] == vote  # a vote deleted since is no row here, and one cast since is none there
        values[at[read]] = propensity[read]
    return pa.array(values, mask=np.isnan(values))


def _epoch_seconds(text: pa.Array) -> pa.Array:
    """SQLite's stored times ("2026-01-01 00:00:00.000000", UTC) as seconds since 1970."""
    micros = pc.cast(pc.cast(text, pa.timestamp("us")), pa.int64())
    return pc.divide(pc.cast(micros, pa.float64()), 1e6)


def _count_unstored(session: Session, col: dict[str, pa.Array], cache: FeatureCounts) -> None:
    """Fill in the counts of answers stored without the integer columns: from
    their JSON where it has them, else counted from their text (once per answer with `cache`)."""
    empty = style_columns(style_features(""))
    for side in "ab":
        how = col[f"no_style_{side}"].to_numpy(zero_copy_only=False)
        rows, blank = np.flatnonzero((how == FROM_TEXT) | (how == JSON_ONLY)), np.flatnonzero(how == BLANK)
        if not rows.size and not blank.size:
            continue
        ids = col[f"id_{side}"].take(pa.array(rows)).to_pylist()
        missing = [i for i in ids if i not in cache]
        for start in range(0, len(missing), 500):  # bounded IN lists
            part = missing[start : start + 500]
            query = select(Response.id, Response.text, Response.style).where(Response.id.in_(part))
            for rid, answer, style in session.execute(query):
                cache[rid] = style if style is not None else style_features(answer or "")
        found = [style_columns(cache[i]) for i in ids]
        for name in (*COUNTS, "style_gps"):
            values = col[f"{name}_{side}"].to_numpy(zero_copy_only=False).astype(np.float64)
            values[rows] = [f[name] for f in found]
            values[blank] = empty[name]
            col[f"{name}_{side}"] = pa.array(values, mask=np.isnan(values)).cast(pa.int64())
        # the trajectory's length (the query's) unless stored with the counts
        tools = col[f"tool_calls_{side}"].to_numpy(zero_copy_only=False).copy()
        for row, f in zip(rows, found, strict=True):
            if f["style_tool_calls"] is not None:
                tools[row] = f["style_tool_calls"]
        col[f"tool_calls_{side}"] = pa.array(tools)


def _rank_table(session: Session, col: dict[str, pa.Array]) -> pa.Table:
    """The RANK_SCHEMA columns, as `db.export_vote` and `format.to_row` would write them."""
    rows = len(col["choice"])
    out: dict[str, pa.Array] = {
        "model_a": col["model_a"],
        "model_b": col["model_b"],
        "winner": _winner(col["choice"]),
        "judge": col["judge"],
        "anony": pa.nulls(rows, pa.bool_()),  # a vote cast with names shown carries the flag already
        "language": pa.nulls(rows, pa.string()),
        "tstamp": col["created_at"],
        "conv_metadata": pa.nulls(rows, RANK_SCHEMA.field("conv_metadata").type),
        "language_code": col["language_code"],
        "gps_count_a": pc.fill_null(col["style_gps_a"], 0),
        "gps_count_b": pc.fill_null(col["style_gps_b"], 0),
        "tool_calls_a": pc.fill_null(col["tool_calls_a"], 0),
        "tool_calls_b": pc.fill_null(col["tool_calls_b"], 0),
        "gate_a": pc.equal(pc.fill_null(col["gate_a"], 0), 1),
        "gate_b": pc.equal(pc.fill_null(col["gate_b"], 0), 1),
        "categories": _string_lists(col["categories"]),
        "flags": _string_lists(col["flags"]),
        "battle_status": col["battle_status"],
        "sides_done": pc.equal(col["sides_done"], 1),
        "propensity": col["propensity"],
        "answer_country_a": col["answer_country_a"],
        "answer_country_b": col["answer_country_b"],
    }
    out.update(_truth(session, col))
    return pa.Table.from_arrays([out[f.name] for f in RANK_SCHEMA], schema=RANK_SCHEMA)


def _winner(choice: pa.Array) -> pa.Array:
    choices = list(CHOICE_TO_WINNER)
    index = pc.index_in(choice, value_set=pa.array(choices))
    return pa.DictionaryArray.from_arrays(index, pa.array([CHOICE_TO_WINNER[c] for c in choices])).cast(pa.string())


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
