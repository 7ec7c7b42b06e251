"""Hostile vote files: small on disk, enormous once decoded.

* `list_bomb`: the issue's 1.6 KB Parquet file, one row whose `categories` holds 20,000,000
  empty strings (written by pyarrow: offsets only, no characters).
* `string_bomb`: one row whose prompt is 1.7 GB of one letter, in a file of about 2 MB.
  pyarrow would need the whole string in memory (and several times that while writing),
  so the file is written here by hand: Parquet's layout and Thrift's compact protocol as
  their specifications give them, one GZIP-compressed data page per column, required
  columns only (no level data). A megabyte of the letter is compressed once and its
  deflate block repeated, so writing it takes a second and a few megabytes.
* `dictionary_bomb`: 20,000 rows, each a valid 100,000-character prompt, all one entry of
  the column's dictionary: a few kilobytes that decode to 2 GB.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

MAGIC = b"PAR1"


def list_bomb(path: Path, items: int = 20_000_000) -> Path:
    offsets = pa.array(np.zeros(items + 1, dtype=np.int32)).buffers()[1]
    empty_strings = pa.StringArray.from_buffers(items, offsets, pa.py_buffer(b""))
    categories = pa.ListArray.from_arrays(pa.array([0, items], pa.int32()), empty_strings)
    table = pa.table(
        {"model_a": ["x"], "model_b": ["y"], "winner": ["model_a"], "tstamp": [1767225600.0], "categories": categories}
    )
    pq.write_table(table, path, compression="zstd")
    return path


def dictionary_bomb(path: Path, rows: int = 20_000, chars: int = 100_000) -> Path:
    prompt = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["p" * chars]))
    table = pa.table(
        {
            "question_id": [f"{i:032x}" for i in range(rows)],
            "model_a": pa.array(["x"] * rows).dictionary_encode(),
            "model_b": pa.array(["y"] * rows).dictionary_encode(),
            "winner": pa.array(["model_a"] * rows).dictionary_encode(),
            "prompt": prompt,
        }
    )
    pq.write_table(table, path, compression="zstd")
    return path


def string_bomb(path: Path, length: int = 1_700_000_000, letter: bytes = b"a") -> Path:
    """One vote whose prompt is `length` copies of `letter` (at most 2**31 - 5: a page's size is an i32)."""
    columns = {"model_a": [b"x"], "model_b": [b"y"], "winner": [b"model_a"]}
    with path.open("wb") as f:
        f.write(MAGIC)
        chunks = [_write_column(f, name, _plain(values)) for name, values in columns.items()]
        chunks.append(_write_column(f, "prompt", _repeated(letter, length)))
        f.write(_footer(chunks, rows=1))
    return path


# -- Parquet by hand -------------------------------------------------------------------------

BYTE_ARRAY = 6
REQUIRED = 0
UTF8 = 0
PLAIN = 0
GZIP = 2
DATA_PAGE = 0


def _plain(values: list[bytes]) -> list[tuple[bytes, int]]:
    """PLAIN-encoded BYTE_ARRAY values: each one's length (4 bytes, little-endian), then it."""
    return [(b"".join(struct.pack("<I", len(v)) + v for v in values), 1)]


def _repeated(letter: bytes, length: int) -> list[tuple[bytes, int]]:
    block = letter * (1 << 20)
    whole, rest = divmod(length, len(block))
    return [(struct.pack("<I", length), 1), (block, whole), (letter * rest, 1)]


def _write_column(f, name: str, page: list[tuple[bytes, int]]) -> dict[str, int | str]:  # type: ignore[no-untyped-def]
    """One column chunk of one data page holding `page` (pieces, each repeated so many times)."""
    body, size = _gzip(page)
    header = _struct(
        (1, "i32", DATA_PAGE),
        (2, "i32", size),
        (3, "i32", len(body)),
        (5, "struct", [(1, "i32", 1), (2, "i32", PLAIN), (3, "i32", 3), (4, "i32", 3)]),
    )
    offset = f.tell()
    f.write(header)
    f.write(body)
    return {"name": name, "offset": offset, "uncompressed": len(header) + size, "compressed": len(header) + len(body)}


GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def _gzip(pieces: list[tuple[bytes, int]]) -> tuple[bytes, int]:
    """A gzip stream of the pieces and its uncompressed size, compressing each distinct piece
    once: after a full flush deflate looks back at nothing, so a repeat is the same bytes."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate: the gzip frame is ours
    out, crc, size = [GZIP_HEADER], 0, 0
    for data, times in pieces:
        if not times:
            continue
        block = deflate.compress(data) + deflate.flush(zlib.Z_FULL_FLUSH)
        out.append(block * times)
        for _ in range(times):
            crc = zlib.crc32(data, crc)
        size += len(data) * times
    out.append(deflate.flush())
    out.append(struct.pack("<II", crc, size & 0xFFFFFFFF))
    return b"".join(out), size


def _footer(chunks: list[dict[str, int | str]], rows: int) -> bytes:
    schema = [[(4, "binary", b"schema"), (5, "i32", len(chunks))]]
    schema += [
        [(1, "i32", BYTE_ARRAY), (3, "i32", REQUIRED), (4, "binary", str(c["name"]).encode()), (6, "i32", UTF8)]
        for c in chunks
    ]
    column_chunks = [
        [
            (2, "i64", c["offset"]),
            (
                3,
                "struct",
                [
                    (1, "i32", BYTE_ARRAY),
                    (2, "list_i32", [PLAIN]),
                    (3, "list_binary", [str(c["name"]).encode()]),
                    (4, "i32", GZIP),
                    (5, "i64", rows),
                    (6, "i64", c["uncompressed"]),
                    (7, "i64", c["compressed"]),
                    (9, "i64", c["offset"]),
                ],
            ),
        ]
        for c in chunks
    ]
    total = sum(int(c["uncompressed"]) for c in chunks)
    row_group = [(1, "list_struct", column_chunks), (2, "i64", total), (3, "i64", rows)]
    meta = _struct((1, "i32", 1), (2, "list_struct", schema), (3, "i64", rows), (4, "list_struct", [row_group]))
    return meta + struct.pack("<I", len(meta)) + MAGIC


# -- Thrift's compact protocol -----------------------------------------------------------------

_TYPES = {"i32": 5, "i64": 6, "binary": 8, "list": 9, "struct": 12}


def _struct(*fields: tuple[int, str, object]) -> bytes:
    out, last = bytearray(), 0
    for field_id, kind, value in fields:
        wire = _TYPES["list" if kind.startswith("list_") else kind]
        out += bytes([((field_id - last) << 4) | wire])  # every delta here is 1..15
        last = field_id
        out += _value(kind, value)
    out += b"\x00"
    return bytes(out)


def _value(kind: str, value: object) -> bytes:
    if kind in ("i32", "i64"):
        return _varint(_zigzag(int(value)))  # type: ignore[call-overload]
    if kind == "binary":
        data = bytes(value)  # type: ignore[call-overload]
        return _varint(len(data)) + data
    if kind == "struct":
        return _struct(*value)  # type: ignore[misc]
    element = kind.removeprefix("list_")
    items = list(value)  # type: ignore[call-overload]
    head = bytes([(len(items) << 4) | _TYPES[element]]) if len(items) < 15 else bytes([0xF0 | _TYPES[element]])
    head += b"" if len(items) < 15 else _varint(len(items))
    return head + b"".join(_value(element, item) for item in items)


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)
