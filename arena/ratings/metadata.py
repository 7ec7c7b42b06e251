"""The style counts of each vote's answers from conv_metadata, in bulk.

`MetadataCounts` sums conv_metadata's counts into the four style features
it holds (FEATURES' length, list, header and emphasis) per side, checking
them as `format.validate_row` does. A Parquet file's conv_metadata is read
a row group at a time (`export.columnar.metadata_row_groups`), so its 26
integer columns (2 GB at ten million votes) are never held whole: only the
sums, as int32 where they fit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arena.export.contract import HEADERS

GROUPS: dict[str, tuple[str, ...]] = {
    "header_count": tuple(HEADERS),
    "list_count": ("ordered", "unordered"),
    "bold_count": ("**", "__"),
    "italic_count": ("*", "_"),
}


@dataclass(frozen=True)
class MetadataCounts:
    """Per side a (votes, 4) array of (tokens, list items, headers, bold and
    italic) counts (None: no votes); `missing` marks the votes without
    conv_metadata (None: none is), whose counts read 0; `valid` is False when
    a count is one the validator refuses."""

    a: np.ndarray | None
    b: np.ndarray | None
    missing: np.ndarray | None = None
    valid: bool = True

    @classmethod
    def of(cls, meta: pa.Array, *, check: bool = True) -> MetadataCounts:
        return cls.joined([meta], check=check)

    @classmethod
    def joined(cls, chunks: Iterable[pa.Array], *, check: bool = True) -> MetadataCounts:
        """The counts of consecutive parts of one column (row groups);
        `check=False` trusts them (the database's own)."""
        parts: dict[str, list[np.ndarray]] = {"a": [], "b": [], "missing": []}
        for meta in chunks:
            if check and not _valid(meta):
                return cls(None, None, valid=False)
            for side in "ab":
                parts[side].append(_side_counts(meta, side))
            parts["missing"].append(
                meta.is_null().to_numpy(zero_copy_only=False) if meta.null_count else np.zeros(len(meta), bool)
            )
        if not parts["a"]:
            return cls(None, None)
        a, b, missing = (np.concatenate(p) if len(p) > 1 else p[0] for p in parts.values())
        return cls(a, b, missing if missing.any() else None)

    @classmethod
    def of_sums(cls, a: list[np.ndarray], b: list[np.ndarray]) -> MetadataCounts:
        """From the four count columns per side, summed already (the database's)."""
        return cls(compact_counts(a), compact_counts(b))

    def features(self, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
        """The counts of the votes `rows` (None: every vote), or None when one
        of them has no conv_metadata (then no vote has style features, as the
        row path decides) or there are none."""
        if self.a is None or self.b is None or not len(self.a):
            return None
        if rows is None:
            return None if self.missing is not None else (self.a, self.b)
        if not rows.size or (self.missing is not None and self.missing[rows].any()):
            return None
        return self.a[rows], self.b[rows]


def compact_counts(columns: list[np.ndarray]) -> np.ndarray:
    """Count columns as one (votes, columns) array: int32 when every count
    fits (half the memory of float64, and exact), else int64. The style fit
    takes them as float64 either way."""
    fits = all(not c.size or (int(c.min()) >= 0 and int(c.max()) < 2**31) for c in columns)
    out = np.empty((columns[0].size, len(columns)), dtype=np.int32 if fits else np.int64)
    for j, column in enumerate(columns):
        out[:, j] = column
    return out


def _side_counts(meta: pa.Array, side: str) -> np.ndarray:
    groups: list[list[tuple[str, ...]]] = [
        [(f"sum_assistant_{side}_tokens",)],
        [(f"list_count_{side}", k) for k in GROUPS["list_count"]],
        [(f"header_count_{side}", k) for k in HEADERS],
        [(f"{group}_{side}", k) for group in ("bold_count", "italic_count") for k in GROUPS[group]],
    ]
    return compact_counts([sum_counts([pc.struct_field(meta, list(path)) for path in paths]) for paths in groups])


def sum_counts(arrays: list[pa.Array]) -> np.ndarray:
    """The sum of integer count columns (a missing count is 0), as int64."""
    total = np.zeros(len(arrays[0]), dtype=np.int64)
    for array in arrays:
        if array.null_count:
            array = pc.fill_null(array, 0)
        np.add(total, array.to_numpy(zero_copy_only=False), out=total)
    return total


def _valid(meta: pa.Array) -> bool:
    """`format.validate_row`'s checks of conv_metadata (all-null: nothing to refuse)."""
    if meta.null_count == len(meta):
        return True
    checks = []
    for side in "ab":
        tokens = pc.struct_field(meta, f"sum_assistant_{side}_tokens")
        checks.append(pc.all(pc.and_(pc.greater_equal(tokens, 0), pc.less(tokens, 2**31))))
        for group, keys in GROUPS.items():
            for key in keys:
                checks.append(pc.all(pc.greater_equal(pc.struct_field(meta, [f"{group}_{side}", key]), 0)))
    # all() of an all-null column is null: nothing refused there
    return all(c.as_py() is not False for c in checks)
