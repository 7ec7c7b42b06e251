"""Export files read as columns, for `arena rank --input`.

Ranking needs a dozen of an export's columns; the row readers in readers.py
turn every row into a Python dict (about 8 us a plain row, 28 us with style
metadata), which dominated `arena rank --input` on a million votes. Here
pyarrow reads only the columns ranking uses, in C++, into an Arrow table:
Parquet by column projection, JSONL with an explicit schema (other keys are
skipped by the parser), CSV with its JSON cells parsed as one JSON document
stream. `read_vote_table` returns None when it cannot (a `.json` array file,
an unreadable file, a cell of the wrong type): the caller then takes the row
path, which names every bad row.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arena.export import bounds
from arena.export.contract import arrow_schema, columns_of_kind
from arena.export.readers import SUFFIX_FORMATS

# Every column ranking reads, as the contract types it (the row validator's
# types); a labelled battle's accuracy fields are among them.
RANK_COLUMNS = (
    "model_a",
    "model_b",
    "winner",
    "judge",
    "anony",
    "language",
    "tstamp",
    "conv_metadata",
    "language_code",
    "gps_count_a",
    "gps_count_b",
    "tool_calls_a",
    "tool_calls_b",
    "gate_a",
    "gate_b",
    "categories",
    "flags",
    "battle_status",
    "sides_done",
    "propensity",
    "error_km_a",
    "error_km_b",
    "country",
    "continent",
    "answer_country_a",
    "answer_country_b",
    "label_precision_km",
)
# the conv_metadata counts the style features come from
RANK_METADATA = tuple(
    name
    for side in "ab"
    for name in (
        f"sum_assistant_{side}_tokens",
        f"header_count_{side}",
        f"list_count_{side}",
        f"bold_count_{side}",
        f"italic_count_{side}",
    )
)
RANK_SCHEMA = arrow_schema(columns=RANK_COLUMNS, metadata=RANK_METADATA)
# read as dictionaries for ranking: few distinct values, one string per vote otherwise
DICTIONARY_COLUMNS = ("model_a", "model_b", "winner")
JSON_CELLS = tuple(name for name in columns_of_kind("json") if name in RANK_COLUMNS)
TEXT_CELLS = tuple(name for name in columns_of_kind("text") if name in RANK_COLUMNS and name != "winner")


def read_vote_table(path: Path, *, for_ranking: bool = False) -> pa.Table | None:
    """The columns of RANK_SCHEMA present in the file (absent ones as nulls), or None.

    `for_ranking=True` reads a Parquet file leaner: its conv_metadata is left
    out (as nulls) for `metadata_row_groups` to read a row group at a time,
    and the contender and winner columns come as the file's dictionaries
    (a code per vote, no string per vote)."""
    fmt = SUFFIX_FORMATS.get(path.suffix.lower())
    try:
        if fmt == "parquet":
            table = _parquet(path, for_ranking)
        elif fmt == "jsonl":
            table = _jsonl(path)
        elif fmt == "csv":
            table = _csv(path)
        else:
            return None
    except (pa.ArrowException, OSError, ValueError, KeyError, TypeError):
        return None  # the row path says what is wrong, row by row
    return complete_rank_table(table)


def metadata_row_groups(path: Path) -> Iterator[pa.Array] | None:
    """A Parquet file's conv_metadata a row group at a time, as RANK_SCHEMA
    types it; None when the file is no Parquet file or has no conv_metadata
    (then `read_vote_table` gives all there is). A read that fails raises
    pyarrow's error when the row group is read."""
    if SUFFIX_FORMATS.get(path.suffix.lower()) != "parquet":
        return None
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(path) as file:
            if "conv_metadata" not in file.schema_arrow.names:
                return None
    except (pa.ArrowException, OSError):
        return None
    return _row_groups(path, "conv_metadata")


def _row_groups(path: Path, name: str) -> Iterator[pa.Array]:
    import pyarrow.parquet as pq

    want = RANK_SCHEMA.field(name).type
    with pq.ParquetFile(path) as file:
        for i in range(file.num_row_groups):
            for chunk in file.read_row_group(i, columns=[name]).column(0).chunks:
                yield _project_struct(chunk, want)


def _parquet(path: Path, for_ranking: bool) -> pa.Table:
    import pyarrow.parquet as pq

    # ParquetFile, not read_table: read_table goes through pyarrow.dataset, which imports pandas
    with pq.ParquetFile(path, read_dictionary=DICTIONARY_COLUMNS if for_ranking else None) as file:
        problems = bounds.parquet_problems(file.metadata, set(RANK_SCHEMA.names))
        if problems:  # a list or string too long to decode: the row path names each one
            raise ValueError(problems[0])
        present = set(file.schema_arrow.names) - ({"conv_metadata"} if for_ranking else set())
        table = file.read(columns=[f.name for f in RANK_SCHEMA if f.name in present])
    return _cast_present(table)


def _jsonl(path: Path) -> pa.Table:
    from pyarrow import json as pa_json

    options = pa_json.ParseOptions(explicit_schema=RANK_SCHEMA, unexpected_field_behavior="ignore")
    return pa_json.read_json(path, parse_options=options)


def _csv(path: Path) -> pa.Table:
    from pyarrow import csv as pa_csv

    with path.open(encoding="utf-8", newline="") as f:
        header = next(csv.reader(f), [])
    wanted = [f.name for f in RANK_SCHEMA if f.name in header]
    convert = pa_csv.ConvertOptions(
        include_columns=wanted,
        column_types={name: pa.string() for name in wanted},
        strings_can_be_null=False,
    )
    raw = pa_csv.read_csv(path, convert_options=convert)
    columns = {}
    for name in raw.column_names:
        cells = raw.column(name).combine_chunks()
        empty = pc.equal(cells, "")
        field = RANK_SCHEMA.field(name)
        if name in JSON_CELLS:
            columns[name] = _parse_json_cells(cells, empty, field.type)
        elif name in TEXT_CELLS:
            # a text cell the exporter quoted against spreadsheet formulas loses its quote again
            unquoted = pc.replace_substring_regex(cells, pattern=r"^'('*[=+\-@\t\r])", replacement=r"\1")
            columns[name] = pc.if_else(empty, pa.scalar(None, pa.string()), unquoted)
        elif field.type == pa.bool_():
            lower = pc.utf8_lower(cells)
            if not pc.all(pc.or_(empty, pc.is_in(lower, pa.array(["true", "false"])))).as_py():
                raise ValueError("not a boolean")
            columns[name] = pc.if_else(empty, pa.scalar(None, pa.bool_()), pc.equal(lower, "true"))
        else:
            columns[name] = pc.cast(pc.if_else(empty, pa.scalar(None, pa.string()), cells), field.type)
    return pa.table(columns)


def _parse_json_cells(cells: pa.Array, empty: pa.Array, kind: pa.DataType) -> pa.Array:
    """Each cell is one JSON value: wrap them as `{"v": ...}` lines and let the
    JSON reader parse them all at once."""
    from pyarrow import json as pa_json

    filled = pc.if_else(empty, "null", cells)
    lines = pc.binary_join_element_wise('{"v":', filled, "}\n", "")
    # the values buffer of a fresh string array is every line back to back
    _, offsets, data = lines.buffers()
    ends = np.frombuffer(offsets, dtype=np.int32, count=len(lines) + 1, offset=lines.offset * 4)
    blob = memoryview(data)[ends[0] : ends[-1]] if data is not None else b""
    if not blob:
        return pa.nulls(len(cells), kind)
    schema = pa.schema([pa.field("v", kind)])
    parsed = pa_json.read_json(
        io.BytesIO(bytes(blob)),
        parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )
    return parsed.column("v").combine_chunks()


def _cast_present(table: pa.Table) -> pa.Table:
    """Parquet columns to RANK_SCHEMA's types (an int tstamp, a struct with extra fields)."""
    columns = {}
    for name in table.column_names:
        want = RANK_SCHEMA.field(name).type
        column = table.column(name)
        if name == "conv_metadata":
            column = pa.chunked_array([_project_struct(chunk, want) for chunk in column.chunks], type=want)
        elif pa.types.is_dictionary(column.type) and column.type.value_type == want:
            column = column.unify_dictionaries()  # each row group has a dictionary of its own
        elif column.type != want:
            column = pc.cast(column, want)
        columns[name] = column
    return pa.table(columns)


def _project_struct(array: pa.Array, want: pa.DataType) -> pa.Array:
    """A struct array with exactly `want`'s fields (missing ones null, extra ones dropped)."""
    if isinstance(want, pa.StructType) and isinstance(array.type, pa.StructType):
        children = []
        for field in want:
            index = array.type.get_field_index(field.name)
            child = array.field(index) if index >= 0 else pa.nulls(len(array), field.type)
            children.append(_project_struct(child, field.type))
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(want), mask=mask)
    return pc.cast(array, want)


def complete_rank_table(table: pa.Table) -> pa.Table:
    """Every RANK_SCHEMA column, absent ones as nulls, in schema order."""
    rows = table.num_rows
    # pa.nulls fills a buffer per column (0.8 GB for a plain file's absent ones at
    # ten million votes); these all point into one, which calloc leaves unwritten
    zeros = pa.py_buffer(bytes(8 * (rows + 1)))
    # columns as read (no copy: a reader that wants one array joins the chunks)
    columns = [
        table.column(f.name) if f.name in table.column_names else pa.chunked_array([_nulls(f.type, rows, zeros)])
        for f in RANK_SCHEMA
    ]
    if all(c.type == f.type for c, f in zip(columns, RANK_SCHEMA, strict=True)):
        return pa.Table.from_arrays(columns, schema=RANK_SCHEMA)
    # dictionary columns (`for_ranking`): RANK_SCHEMA's names, the columns' own types
    return pa.Table.from_arrays(columns, names=RANK_SCHEMA.names)


def _nulls(kind: pa.DataType, rows: int, zeros: pa.Buffer) -> pa.Array:
    """`rows` nulls of `kind`, every buffer (validity, offsets, values) the shared `zeros`."""
    if pa.types.is_struct(kind):
        children = [_nulls(f.type, rows, zeros) for f in kind]
        return pa.Array.from_buffers(kind, rows, [zeros], null_count=rows, children=children)
    if pa.types.is_list(kind):
        empty = pa.array([], kind.value_type)
        return pa.Array.from_buffers(kind, rows, [zeros, zeros], null_count=rows, children=[empty])
    if pa.types.is_string(kind):
        return pa.Array.from_buffers(kind, rows, [zeros, zeros, pa.py_buffer(b"")], null_count=rows)
    return pa.Array.from_buffers(kind, rows, [zeros, zeros], null_count=rows)
