"""Streaming writers: rows in, bytes out, a batch at a time.

Each writer is a generator of byte chunks, so the HTTP export and
`arena export` hold one batch of rows in memory, never the whole table.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from arena.export.format import ANSWER_COLUMNS, COLUMNS, HEADERS, SPREADSHEET_FORMULA

FORMATS = ("jsonl", "csv", "parquet")
MEDIA_TYPES = {
    "jsonl": "application/x-ndjson",
    "csv": "text/csv; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}
BATCH_ROWS = 5000
# CSV cells holding nested values carry them as JSON text
NESTED = ("conv_metadata", "dedup_tag", "categories", "flags")


def write_rows(rows: Iterable[dict[str, Any]], fmt: str, *, answers: bool = False) -> Iterator[bytes]:
    """Encode rows as `fmt` (jsonl, csv or parquet), yielding byte chunks."""
    if fmt == "jsonl":
        return _jsonl(rows)
    if fmt == "csv":
        return _csv(rows, answers)
    if fmt == "parquet":
        return _parquet(rows, answers)
    raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")


def columns(answers: bool) -> tuple[str, ...]:
    return COLUMNS + (ANSWER_COLUMNS if answers else ())


def parquet_schema(answers: bool) -> pa.Schema:
    count = pa.int64()

    def side(s: str) -> list[pa.Field]:
        return [
            pa.field(f"sum_assistant_{s}_tokens", count),
            pa.field(f"context_{s}_tokens", count),
            pa.field(f"header_count_{s}", pa.struct([pa.field(h, count) for h in HEADERS])),
            pa.field(f"list_count_{s}", pa.struct([pa.field("ordered", count), pa.field("unordered", count)])),
            pa.field(f"bold_count_{s}", pa.struct([pa.field("**", count), pa.field("__", count)])),
            pa.field(f"italic_count_{s}", pa.struct([pa.field("*", count), pa.field("_", count)])),
        ]

    meta = pa.struct([pa.field("sum_user_tokens", count), pa.field("turns", count), *side("a"), *side("b")])
    fields = [
        pa.field("question_id", pa.string()),
        pa.field("model_a", pa.string()),
        pa.field("model_b", pa.string()),
        pa.field("winner", pa.string()),
        pa.field("judge", pa.string()),
        pa.field("turn", count),
        pa.field("anony", pa.bool_()),
        pa.field("language", pa.string()),
        pa.field("tstamp", pa.float64()),
        pa.field("conv_metadata", meta),
        pa.field("dedup_tag", pa.struct([pa.field("high_freq", pa.bool_()), pa.field("sampled", pa.bool_())])),
        pa.field("prompt", pa.string()),
        pa.field("image_sha256", pa.string()),
        pa.field("language_code", pa.string()),
        pa.field("gps_count_a", count),
        pa.field("gps_count_b", count),
        pa.field("gate_a", pa.bool_()),
        pa.field("gate_b", pa.bool_()),
        pa.field("categories", pa.list_(pa.string())),
        pa.field("flags", pa.list_(pa.string())),
        pa.field("battle_status", pa.string()),
        pa.field("sides_done", pa.bool_()),
        pa.field("error_km_a", pa.float64()),
        pa.field("error_km_b", pa.float64()),
        pa.field("country", pa.string()),
        pa.field("continent", pa.string()),
        pa.field("answer_country_a", pa.string()),
        pa.field("answer_country_b", pa.string()),
        pa.field("label_precision_km", pa.float64()),
        pa.field("propensity", pa.float64()),
    ]
    if answers:
        fields += [pa.field("answer_a", pa.string()), pa.field("answer_b", pa.string())]
    return pa.schema(fields)


def _jsonl(rows: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    lines: list[str] = []
    for row in rows:
        lines.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
        if len(lines) >= BATCH_ROWS:
            yield ("\n".join(lines) + "\n").encode()
            lines = []
    if lines:
        yield ("\n".join(lines) + "\n").encode()


def _csv(rows: Iterable[dict[str, Any]], answers: bool) -> Iterator[bytes]:
    names = columns(answers)
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
    text = str(value)
    # A cell a spreadsheet would run as a formula (prompts and answers are
    # untrusted) gets a leading quote; our reader takes it off again.
    return "'" + text if SPREADSHEET_FORMULA.match(text) else text


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


def _parquet(rows: Iterable[dict[str, Any]], answers: bool) -> Iterator[bytes]:
    schema = parquet_schema(answers)
    sink = _Drain()
    writer = pq.ParquetWriter(sink, schema, compression="zstd")
    batch: list[dict[str, Any]] = []
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
