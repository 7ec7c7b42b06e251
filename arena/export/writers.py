"""Streaming writers: rows in, bytes out, a batch at a time.

Each writer is a generator of byte chunks, so the HTTP export and
`arena export` hold one batch of rows in memory, never the whole table.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from arena.export.contract import arrow_schema, columns_of_kind, export_columns
from arena.export.format import spreadsheet_text

FORMATS = ("jsonl", "csv", "parquet")
MEDIA_TYPES = {
    "jsonl": "application/x-ndjson",
    "csv": "text/csv; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}
BATCH_ROWS = 5000
# CSV cells holding nested values carry them as JSON text
NESTED = columns_of_kind("json")


def write_rows(
    rows: Iterable[Mapping[str, Any]], fmt: str, *, answers: bool = False, trajectories: bool = False
) -> Iterator[bytes]:
    """Encode rows as `fmt` (jsonl, csv or parquet), yielding byte chunks; the
    optional columns are written when asked for (the rows must carry them)."""
    if fmt == "jsonl":
        return _jsonl(rows)
    if fmt == "csv":
        return _csv(rows, export_columns(answers=answers, trajectories=trajectories))
    if fmt == "parquet":
        return _parquet(rows, arrow_schema(answers=answers, trajectories=trajectories))
    raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")


def _jsonl(rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    lines: list[str] = []
    for row in rows:
        lines.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
        if len(lines) >= BATCH_ROWS:
            yield ("\n".join(lines) + "\n").encode()
            lines = []
    if lines:
        yield ("\n".join(lines) + "\n").encode()


def _csv(rows: Iterable[Mapping[str, Any]], names: tuple[str, ...]) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(names)
    pending = 0
    for row in rows:
        writer.writerow([_csv_cell(name, row.get(name)) for name in names])
        pending += 1
        if pending >= BATCH_ROWS:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
            pending = 0
    yield buffer.getvalue().encode()


def _csv_cell(name: str, value: Any) -> str:
    if value is None:
        return ""
    if name in NESTED:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    # A cell a spreadsheet would run as a formula (prompts and answers are
    # untrusted) gets a leading quote; our reader takes it off again.
    return spreadsheet_text(str(value))


class _Drain(io.RawIOBase):
    """A write-only file whose bytes the generator takes away after each batch."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.chunks.append(chunk)
        self.position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self.position

    def take(self) -> bytes:
        out = b"".join(self.chunks)
        self.chunks.clear()
        return out


def _parquet(rows: Iterable[Mapping[str, Any]], schema: pa.Schema) -> Iterator[bytes]:
    sink = _Drain()
    writer = pq.ParquetWriter(sink, schema, compression="zstd")
    batch: list[Mapping[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH_ROWS:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            batch = []
            yield sink.take()
    if batch:
        writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    writer.close()
    yield sink.take()
