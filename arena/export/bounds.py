"""How much one imported vote may hold, and checking a file against it before it is decoded.

Every list and string of a vote file is bounded: a row may not carry a 20,000,000-item
category list or a 1.7 GB prompt, whatever the format. Three checks, cheapest first:

1. A Parquet file's metadata (`parquet_problems`): per row group and column, the values
   stored and their size before compression, against what that many rows may hold. A
   kilobyte file that decodes to gigabytes is refused without decoding any of it.
2. Each Parquet batch read as Arrow arrays, strings as dictionaries (`oversized`): each
   row's values and bytes of text measured from list offsets and dictionary lengths,
   before any row becomes Python objects. A file may repeat one long value in every row
   through its dictionary at no cost to its size, so a file's text may also expand at
   most EXPANSION times its size on disk (`Expansion`).
3. Each row, in every format (`row_problems`, part of `format.validate_row`): the exact
   limits in characters and entries, in words a person can act on.

A JSONL or CSV row is text already: its line is bounded before it is parsed (readers.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pyarrow loads only where a Parquet file is read
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

# Exact limits of one row. The arena's own answers, trajectories and categories sit far
# below them; FastChat's long prompts still fit.
TEXT_LIMITS = {
    "question_id": 200,
    "model_a": 100,
    "model_b": 100,
    "judge": 200,
    "language": 100,
    "language_code": 16,
    "prompt": 100_000,
    "answer_a": 1_000_000,
    "answer_b": 1_000_000,
}
LIST_LIMITS = {"categories": (100, 200), "flags": (50, 100)}  # entries, characters each
MAX_STEPS = 100  # a trajectory's tool calls (GATE stops after 10 turns)
STEP_TEXT_LIMITS = {"tool": 100, "arguments": 100_000, "thought": 100_000, "observation": 100_000}
MAX_IMAGE_REFS = 20  # images one step made
MAX_TRAJECTORY_CHARS = 1_000_000  # a whole trajectory's text, as much as an answer

# A file's text may expand to this many times its size (at least EXPANSION_FLOOR bytes):
# compressed text shrinks some 3-10 times, a column of a few repeated names more; a
# value repeated in every row through a dictionary, thousands of times.
EXPANSION = 100
EXPANSION_FLOOR = 256 * 2**20
# Room in a column chunk's size beyond its rows' values: page headers, a dictionary page
# (Arrow's writer caps one at 1 MiB), level data.
CHUNK_SLACK = 2 * 2**20


@dataclass(frozen=True)
class Bound:
    """What one row may hold in one column: leaf values (a scalar is 1; a list of
    categories, one per entry; a trajectory, one per field of each step) and characters
    of text, all its strings together."""

    values: int
    chars: int

    @property
    def text_bytes(self) -> int:
        return 4 * self.chars  # UTF-8's longest character


SCALAR = Bound(1, 64)  # a number, a flag, a code: 64 characters are plenty for any of them
BOUNDS: dict[str, Bound] = defaultdict(
    lambda: SCALAR,
    {
        **{name: Bound(1, chars) for name, chars in TEXT_LIMITS.items()},
        **{name: Bound(entries, entries * chars) for name, (entries, chars) in LIST_LIMITS.items()},
        # FastChat's nested counts: 30 numbers; 100 leaves leave room for counts of its own
        "conv_metadata": Bound(100, 1_000),
        "dedup_tag": Bound(10, 64),
        # per step: five fields and its image references
        **{
            side: Bound(MAX_STEPS * (len(STEP_TEXT_LIMITS) + 1 + MAX_IMAGE_REFS), MAX_TRAJECTORY_CHARS)
            for side in ("trajectory_a", "trajectory_b")
        },
    },
)


def row_problems(row: Mapping[str, Any]) -> list[str]:
    """What in this (parsed) row is longer than an import takes, in words."""
    problems = []
    for key, limit in TEXT_LIMITS.items():
        value = row.get(key)
        if isinstance(value, str) and len(value) > limit:
            problems.append(f"{key} is {len(value):,} characters long; the limit is {limit:,}")
    for key, (entries, chars) in LIST_LIMITS.items():
        value = row.get(key)
        if not isinstance(value, list):
            continue
        if len(value) > entries:
            problems.append(f"{key} has {len(value):,} entries; an import takes at most {entries:,}")
            continue
        longest = max((len(v) for v in value if isinstance(v, str)), default=0)
        if longest > chars:
            problems.append(f"a {key} entry is {longest:,} characters long; the limit is {chars:,}")
    for key in ("trajectory_a", "trajectory_b"):
        steps = row.get(key)
        if isinstance(steps, list) and len(steps) > MAX_STEPS:
            problems.append(f"{key} has {len(steps):,} steps; an import takes at most {MAX_STEPS:,}")
    return problems


def step_problems(number: int, step: Mapping[str, Any]) -> list[str]:
    """What in one trajectory step is longer than an import takes."""
    problems = []
    for key, limit in STEP_TEXT_LIMITS.items():
        value = step.get(key)
        if isinstance(value, str) and len(value) > limit:
            problems.append(f"step {number}: {key} is {len(value):,} characters long; the limit is {limit:,}")
    refs = step.get("image_refs")
    if isinstance(refs, list) and len(refs) > MAX_IMAGE_REFS:
        problems.append(f"step {number}: {len(refs):,} image_refs; an import takes at most {MAX_IMAGE_REFS}")
    return problems


def trajectory_chars(steps: list[Any]) -> int:
    return sum(len(s.get(k) or "") for s in steps if isinstance(s, Mapping) for k in STEP_TEXT_LIMITS)


# -- Parquet, before decoding ----------------------------------------------------------------


def parquet_problems(metadata: pq.FileMetaData, columns: set[str]) -> list[str]:
    """Row groups whose `columns` hold more values, or more bytes before compression, than
    their rows may (from the footer alone: nothing is decoded)."""
    problems = []
    first_row = 1
    for index in range(metadata.num_row_groups):
        group = metadata.row_group(index)
        rows = group.num_rows
        values: dict[str, int] = defaultdict(int)
        size: dict[str, int] = defaultdict(int)
        chunks: dict[str, int] = defaultdict(int)
        for j in range(group.num_columns):
            chunk = group.column(j)
            name = chunk.path_in_schema.split(".")[0]
            if name in columns:
                values[name] += chunk.num_values
                size[name] += chunk.total_uncompressed_size
                chunks[name] += 1
        where = f"row group {index + 1} ({_rows(first_row, rows)})"
        for name in sorted(values):
            bound = BOUNDS[name]
            # a list holding nothing still stores one (empty) value a row
            if values[name] > rows * max(bound.values, 1):
                problems.append(
                    f"{where}: {name} holds {values[name]:,} values; an import takes at most {bound.values:,} a row"
                )
            elif size[name] > rows * (bound.text_bytes + 16 * bound.values) + chunks[name] * CHUNK_SLACK:
                problems.append(
                    f"{where}: {name} holds {size[name]:,} bytes before compression; an import takes at most "
                    f"{bound.text_bytes:,} a row ({bound.chars:,} characters)"
                )
        first_row += rows
    return problems


def _rows(first: int, count: int) -> str:
    return f"row {first:,}" if count == 1 else f"rows {first:,} to {first + count - 1:,}"


def string_paths(schema: pq.ParquetSchema) -> list[str]:
    """The paths of the file's byte-array leaves (its strings), as `read_dictionary` names them."""
    return [schema.column(i).path for i in range(len(schema)) if schema.column(i).physical_type == "BYTE_ARRAY"]


# -- Arrow batches, before rows become Python objects --------------------------------------


def measure(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(leaf values, bytes of text) of each row of one column, at any nesting, from offsets
    and (for dictionary strings) the dictionary's lengths: nothing is copied out."""
    import numpy as np

    n = len(array)
    values = np.zeros(n, dtype=np.int64)
    text = np.zeros(n, dtype=np.int64)
    _walk(array, np.arange(n), values, text)
    return values, text


def _walk(array: pa.Array, rows: np.ndarray, values: np.ndarray, text: np.ndarray) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if len(array) == 0:
        return
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        parents = pc.list_parent_indices(array).to_numpy(zero_copy_only=False)
        _walk(pc.list_flatten(array), rows[parents], values, text)
        return
    if pa.types.is_struct(kind):
        for child in array.flatten():
            _walk(child, rows, values, text)
        return
    values += np.bincount(rows, minlength=values.size)
    if pa.types.is_dictionary(kind):
        lengths = _lengths(array.dictionary).take(array.indices)
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind):
        lengths = _lengths(array)
    else:
        return
    counted = pc.fill_null(lengths, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    text += np.bincount(rows, weights=counted, minlength=text.size).astype(np.int64)


def _lengths(array: pa.Array) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type) or pa.types.is_binary(array.type):
        return pc.binary_length(array)
    return pa.nulls(len(array), pa.int64())  # a dictionary of numbers holds no text


def oversized(batch: pa.RecordBatch) -> tuple[dict[int, str], np.ndarray]:
    """Rows of the batch over a bound (index in the batch -> reason) and each row's bytes of text."""
    import numpy as np

    reasons: dict[int, str] = {}
    total = np.zeros(batch.num_rows, dtype=np.int64)
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        bound = BOUNDS[name]
        values, text = measure(column)
        total += text
        for index in np.flatnonzero((values > max(bound.values, 1)) | (text > bound.text_bytes)):
            if int(index) in reasons:
                continue
            if values[index] > max(bound.values, 1):
                reasons[int(index)] = (
                    f"{name} holds {values[index]:,} values; an import takes at most {bound.values:,} a row"
                )
            else:
                reasons[int(index)] = (
                    f"{name} holds {text[index]:,} bytes of text; an import takes at most "
                    f"{bound.text_bytes:,} a row ({bound.chars:,} characters)"
                )
    return reasons, total


class Expansion:
    """The running total of a file's decoded text against what its size allows."""

    def __init__(self, file_size: int) -> None:
        self.allowed = max(EXPANSION_FLOOR, EXPANSION * file_size)
        self.file_size = file_size
        self.seen = 0

    def add(self, text_bytes: int) -> str | None:
        """The reason to stop reading, once the file's text passes what it may expand to."""
        self.seen += text_bytes
        if self.seen <= self.allowed:
            return None
        return (
            f"the file's text expands to more than {self.allowed:,} bytes, over {EXPANSION} times its size "
            f"({self.file_size:,} bytes); an import takes no file that repeats long values like this"
        )
