"""Readers for exported votes: JSONL, JSON (FastChat's array files), CSV, Parquet.

`iter_rows(path)` yields (where, row) lazily, where `where` is what a person
needs to find the row ("line 12", "row 3"); `check_file(path)` reads the whole
file first and raises FormatError listing every bad row, so an import either
takes every row or none.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from arena.export import bounds
from arena.export.contract import columns_of_kind, export_columns
from arena.export.format import SPREADSHEET_FORMULA, FormatError, validate_row

SUFFIX_FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
NESTED = columns_of_kind("json")
INTEGER_COLUMNS = columns_of_kind("integer")
BOOLEAN_COLUMNS = columns_of_kind("boolean")
NUMBER_COLUMNS = columns_of_kind("number")
# text a CSV cell leaves empty for "": FastChat rows may hold no prompt or judge
EMPTY_TEXT_COLUMNS = ("prompt", "judge", "answer_a", "answer_b")
MAX_ERRORS = 1000
# One row, read before it is parsed: two answers at their limit, escaped as JSON, and the rest.
# A longer line is refused without being held in memory whole.
MAX_ROW_CHARS = 16 * 1024 * 1024
# Parquet: rows read as Arrow at once, and text turned into Python objects at once
BATCH_ROWS = 5000
SLICE_BYTES = 32 * 2**20
KNOWN_COLUMNS = frozenset(export_columns(answers=True, trajectories=True))
TOO_DEEP = "nested too deeply to be a vote (JSON arrays or objects inside one another hundreds of times)"


def detect_format(path: Path) -> str:
    fmt = SUFFIX_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise FormatError([f"{path.name}: unknown file type; use .jsonl, .json, .csv or .parquet"])
    return fmt


def iter_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, parsed row) for every row; a row that cannot be parsed comes as
    (where, FormatError) so the caller can keep collecting."""
    fmt = detect_format(path)
    if not path.exists():
        raise FormatError([f"{path}: no such file"])
    if fmt == "jsonl":
        yield from _jsonl(path)
    elif fmt == "json":
        yield from _json_array(path)
    elif fmt == "csv":
        yield from _csv(path)
    else:
        yield from _parquet(path)


def check_file(path: Path) -> int:
    """Validate every row; raise FormatError with all reasons, else return the row count."""
    errors: list[str] = []
    count = 0
    for where, row in iter_rows(path):
        count += 1
        problems = [str(row)] if isinstance(row, Exception) else validate_row(row)
        errors.extend(f"{where}: {p}" for p in problems)
        if len(errors) >= MAX_ERRORS:
            errors.append("(stopped after 1000 problems)")
            break
    if errors:
        raise FormatError(errors)
    if count == 0:
        raise FormatError([f"{path.name}: no votes in the file"])
    return count


def valid_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Rows of a file already passed by `check_file`."""
    for _, row in iter_rows(path):
        yield row


def _jsonl(path: Path) -> Iterator[tuple[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for number, line in _bounded_lines(f):
            if line is None:
                yield f"line {number}", ValueError(f"the line is longer than {MAX_ROW_CHARS:,} characters")
            elif line.strip():
                yield f"line {number}", _json(line)


def _bounded_lines(f: IO[str]) -> Iterator[tuple[int, str | None]]:
    """(number, line) for each line of `f`; None for a line over MAX_ROW_CHARS, skipped in pieces."""
    number = 0
    while line := f.readline(MAX_ROW_CHARS + 1):
        number += 1
        if len(line) > MAX_ROW_CHARS and not line.endswith("\n"):
            while line and not line.endswith("\n"):
                line = f.readline(1024 * 1024)
            yield number, None
        else:
            yield number, line


def _json(text: str) -> Any:
    """The parsed value, or a ValueError that says in words why not (never a RecursionError)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})")
    except RecursionError:
        return ValueError(TOO_DEEP)


def _json_array(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        yield f"line {exc.lineno}", ValueError(f"not valid JSON ({exc.msg})")
        return
    except RecursionError:
        yield "line 1", ValueError(TOO_DEEP)
        return
    if not isinstance(data, list):
        yield "line 1", ValueError("a .json export must be an array of rows (or use .jsonl)")
        return
    for number, row in enumerate(data, start=1):
        yield f"record {number}", row


def _csv(path: Path) -> Iterator[tuple[str, Any]]:
    # the csv module refuses cells over 128 KiB by default; an exported answer can be longer
    csv.field_size_limit(MAX_ROW_CHARS)
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        while True:
            try:
                record = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:  # a cell over the limit, or a NUL byte: the rest cannot be trusted
                yield f"line {reader.line_num}", ValueError(f"not a readable CSV record ({exc})")
                return
            where = f"line {reader.line_num}"
            try:
                yield where, _csv_row(record)
            except ValueError as exc:
                yield where, exc
            except RecursionError:
                yield where, ValueError(TOO_DEEP)


def _csv_row(record: dict[str, str | None]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for name, cell in record.items():
        if name is None:
            raise ValueError("more cells than header columns")
        if cell is None or cell == "":
            row[name] = (cell or "") if name in EMPTY_TEXT_COLUMNS else None
            continue
        if name in NESTED:
            try:
                row[name] = json.loads(cell)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{name} is not valid JSON ({exc.msg})") from exc
        elif name in INTEGER_COLUMNS:
            row[name] = _parse_int(name, cell)
        elif name in BOOLEAN_COLUMNS:
            if cell.lower() not in ("true", "false"):
                raise ValueError(f"{name} must be true or false, got {cell!r}")
            row[name] = cell.lower() == "true"
        elif name in NUMBER_COLUMNS:
            try:
                row[name] = float(cell)
            except ValueError as exc:
                raise ValueError(f"{name} must be a number, got {cell!r}") from exc
        else:
            row[name] = cell[1:] if SPREADSHEET_FORMULA.match(cell) and cell.startswith("'") else cell
    return row


def _parse_int(name: str, cell: str) -> int:
    try:
        return int(cell)
    except ValueError as exc:
        raise ValueError(f"{name} must be a whole number, got {cell!r}") from exc


def _parquet(path: Path) -> Iterator[tuple[str, Any]]:
    """Rows of a Parquet file, measured before they are decoded (`bounds`): the footer
    first, then each batch as Arrow arrays; only rows within bounds become Python objects,
    a slice of at most SLICE_BYTES of text at a time. Columns outside the contract are
    never read."""
    import numpy as np
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
        yield "row 1", ValueError(f"not a readable Parquet file ({exc})")
        return
    known = [name for name in parquet.schema_arrow.names if name in KNOWN_COLUMNS]
    problems = bounds.parquet_problems(parquet.metadata, set(known))
    if problems:
        for problem in problems:
            where, _, reason = problem.partition(": ")
            yield where, ValueError(reason)
        return
    # strings as dictionaries: a value the file repeats is held once, however many rows name it
    strings = bounds.string_paths(parquet.schema)
    wanted = [p for p in strings if p.split(".")[0] in known]
    parquet = pq.ParquetFile(path, read_dictionary=wanted)
    expansion = bounds.Expansion(path.stat().st_size)
    number = 0  # rows before this batch
    for batch in _batches(parquet, known):
        too_big, text = bounds.oversized(batch)
        text[list(too_big)] = 0  # never decoded
        start = 0
        while start < batch.num_rows:
            # rows whose text together stays under SLICE_BYTES (at least one row)
            end = start + max(1, int(np.searchsorted(np.cumsum(text[start:]), SLICE_BYTES, side="right")))
            stop = expansion.add(int(text[start:end].sum()))
            if stop is not None:
                yield f"row {number + start + 1}", ValueError(stop)
                return
            keep = [i for i in range(start, end) if i not in too_big]
            decoded = iter(batch.take(keep).to_pylist() if keep else [])
            for index in range(start, end):
                yield f"row {number + index + 1}", ValueError(too_big[index]) if index in too_big else next(decoded)
            start = end
        number += batch.num_rows


def _batches(parquet: Any, columns: list[str]) -> Iterator[Any]:
    """The file's batches a row group at a time: a batch that spans two row groups meets two
    dictionaries, which Arrow cannot join in a nested column."""
    for group in range(parquet.num_row_groups):
        yield from parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=columns)
