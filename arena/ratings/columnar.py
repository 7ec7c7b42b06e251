"""An export file's votes to a VoteLog in bulk: no Python object per vote.

`log_from_table(table)` does what `files.log_from_rows` does row by row (the
same checks on the columns ranking reads, the same exclusions, categories,
regions, voters, style features and labelled votes) with Arrow and numpy on
whole columns; Python objects only for the few labelled battles and per
distinct name. Each text column is hashed once (a dictionary encoding) and
checked, named and grouped per distinct value through integer codes. It returns None when a value would be refused by the
validator: the row path then names the row with its line number. The two
paths give identical logs; a test checks it on every export format, and the
database's votes (`arena.export.vote_table`) come the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arena.db.vocabulary import BATTLE_STATUSES
from arena.export.bounds import LIST_LIMITS, TEXT_LIMITS
from arena.export.format import (
    CONTINENT_NAMES,
    MAX_LANGUAGE_CODE,
    MAX_TSTAMP,
    NOT_ANONYMOUS,
    WINNERS,
)
from arena.ratings.accuracy import LabelledVote
from arena.ratings.anomaly import UNKNOWN_VOTER
from arena.ratings.filters import CHOICE_OUTCOME, EXCLUDED_BATTLE_STATUSES
from arena.ratings.metadata import MetadataCounts, compact_counts, sum_counts
from arena.ratings.regions import AGREED_PREFIX, CONTINENT_PREFIX, COUNTRY_PREFIX
from arena.ratings.vote_log import GATE_VS_PLAIN, PLAIN_ONLY, VoteLog, VoteLogBuilder

# a labelled battle's accuracy fields (empty text is no value, as `format.row_truth` reads it)
TRUTH_TEXT = ("country", "continent", "answer_country_a", "answer_country_b")
TRUTH_NUMBERS = ("error_km_a", "error_km_b", "label_precision_km")
WINNER_NAMES = list(WINNERS)
ADDRESS = "address"  # not a column of the export format: the database's own votes carry it
OUTCOMES = np.array([CHOICE_OUTCOME[WINNERS[w]] for w in WINNER_NAMES])


def log_from_table(table: pa.Table, metadata: MetadataCounts | None = None) -> tuple[VoteLog, dict[str, int]] | None:
    """(log, excluded counts) from a file's `read_vote_table` table, or None
    for the row path when a value is one the validator would refuse.
    `metadata`: the style counts when conv_metadata was read apart (a
    Parquet file's, a row group at a time); else the table's are used."""
    return log_from_columns(dict(zip(table.column_names, table.columns, strict=True)), metadata)


def log_from_columns(
    columns: dict[str, pa.ChunkedArray], metadata: MetadataCounts | None = None
) -> tuple[VoteLog, dict[str, int]] | None:
    """`log_from_table` of a table's columns, which it empties: each column
    is let go once the log has taken it (a caller holding no other reference
    to the table frees it a column at a time, not after the whole log is built)."""
    col = {name: _array(columns.pop(name)) for name in list(columns)}
    if not len(col["model_a"]):
        return VoteLogBuilder().build(), {}
    names = _Names.of(col["model_a"], col["model_b"])
    if names is None:
        return None
    winner = _index_in(col["winner"], WINNER_NAMES)
    if metadata is None:
        metadata = MetadataCounts.of(col["conv_metadata"])
    if not metadata.valid or not _valid(col, names, winner):
        return None
    return _log(col, names, winner, metadata)


def log_from_trusted_table(
    table: pa.Table, metadata: MetadataCounts, *, address: pa.Array | None = None
) -> tuple[VoteLog, dict[str, int]]:
    """The same from the database's own votes, unchecked: its constraints and
    our writers hold them, and ranking them never refused one. `metadata`:
    the style counts, stored summed (the table's conv_metadata is not read);
    `address`: per row the address hash of the vote's battle (no export
    file carries one), for the anomaly test by address."""
    col = {name: _array(table.column(name)) for name in table.column_names}
    if address is not None:
        col[ADDRESS] = address
    if table.num_rows == 0:
        return VoteLogBuilder().build(), {}
    names = _Names.of(col["model_a"], col["model_b"])
    assert names is not None, "the database holds a vote without a contender"
    return _log(col, names, _index_in(col["winner"], WINNER_NAMES), metadata)


class _Names:
    """The contender names of every vote, hashed once (the costly part of
    reading names): codes per side into one list of distinct names."""

    def __init__(self, sides: list[tuple[np.ndarray, np.ndarray]], values: list[str]) -> None:
        # per side: (dictionary index per vote, in order of first appearance; index -> name in values)
        self.sides, self.values = sides, values
        self.a, self.b = (lookup[raw] for raw, lookup in sides)

    @classmethod
    def of(cls, model_a: pa.Array, model_b: pa.Array) -> _Names | None:
        """None when a name is missing (the validator refuses the row)."""
        if model_a.null_count or model_b.null_count:
            return None
        values: dict[str, int] = {}
        sides = []
        for side in (model_a, model_b):
            # a dictionary as read (a Parquet file's) is renumbered: codes in order of first appearance
            encoded = _in_order_of_appearance(side) if pa.types.is_dictionary(side.type) else pc.dictionary_encode(side)
            lookup = np.array(
                [values.setdefault(v, len(values)) for v in encoded.dictionary.to_pylist()], dtype=np.int64
            )
            sides.append((encoded.indices.to_numpy(zero_copy_only=False), lookup))
        return cls(sides, list(values))

    def contenders(self, kept: np.ndarray | None) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(contenders in order of first appearance, side a before side b of
        each vote; a; b) over the votes `kept` (None: every vote)."""
        k = len(self.values)
        if kept is None:
            a, b = self.a, self.b
            # a dictionary numbers names in order of first appearance: the rows where a new one comes
            first_a, first_b = (self._first_rows(raw, lookup, k) for raw, lookup in self.sides)
        else:
            a, b = self.a[kept], self.b[kept]
            first_a, first_b = _first_rows(a, k), _first_rows(b, k)
        # the first appearance of each name in the sequence a0, b0, a1, b1, ...
        first = np.minimum(2 * first_a, 2 * first_b + 1)
        present = np.flatnonzero(first < 2 * a.size)
        order = present[np.argsort(first[present], kind="stable")]
        renumber = np.full(k, -1, dtype=np.int64)
        renumber[order] = np.arange(order.size)
        return [self.values[i] for i in order], renumber[a], renumber[b]

    @staticmethod
    def _first_rows(raw: np.ndarray, lookup: np.ndarray, k: int) -> np.ndarray:
        first = np.full(k, raw.size, dtype=np.int64)
        if raw.size:
            new = np.empty(raw.size, dtype=bool)
            new[0] = True
            np.greater(raw[1:], np.maximum.accumulate(raw)[:-1], out=new[1:])
            first[lookup] = np.flatnonzero(new)
        return first


def _in_order_of_appearance(encoded: pa.DictionaryArray) -> pa.DictionaryArray:
    """The same values (none missing), the dictionary holding only those that
    occur, in order of first appearance (as `pc.dictionary_encode` of the
    texts numbers them)."""
    order = pc.unique(encoded.indices)  # the codes in order of first appearance
    renumber = np.zeros(len(encoded.dictionary), dtype=np.int32)
    renumber[order.to_numpy()] = np.arange(len(order), dtype=np.int32)
    codes = renumber[encoded.indices.to_numpy()]
    return pa.DictionaryArray.from_arrays(pa.array(codes), encoded.dictionary.take(order))


def _first_rows(codes: np.ndarray, k: int) -> np.ndarray:
    """The first row of each of k codes (len(codes) for a code that never occurs)."""
    first = np.full(k, codes.size, dtype=np.int64)
    if codes.size:
        present, rows = np.unique(codes, return_index=True)
        first[present] = rows
    return first


def _log(
    col: dict[str, pa.Array], names: _Names, winner: np.ndarray, metadata: MetadataCounts
) -> tuple[VoteLog, dict[str, int]]:
    """The log of the votes that count; `winner` indexes WINNER_NAMES per vote."""
    rows = len(col["model_a"])

    reason = _exclusions(col)
    if reason.null_count == rows:
        kept, excluded = np.arange(rows), {}
    else:
        kept = np.flatnonzero(pc.is_null(reason).to_numpy(zero_copy_only=False))
        excluded = {str(e["values"]): int(e["counts"]) for e in pc.value_counts(reason.drop_null()).to_pylist()}
    every = kept.size == rows
    take = None if every else pa.array(kept)

    def kept_col(name: str) -> pa.Array:
        array = col.pop(name)  # each is taken once
        if every or _empty(array):
            return array if every else pa.nulls(kept.size, array.type)
        return array.take(take)

    contenders, a, b = names.contenders(None if every else kept)
    model_a, model_b = kept_col("model_a"), kept_col("model_b")
    outcome = OUTCOMES[winner if every else winner[kept]]

    gate_a = _bools(kept_col("gate_a"))
    gate_b = _bools(kept_col("gate_b"))
    n = len(contenders)
    is_gate = (np.bincount(a, gate_a, n) + np.bincount(b, gate_b, n)) > 0
    features_a, features_b = _features(
        metadata.features(None if every else kept),
        (kept_col("gps_count_a"), kept_col("tool_calls_a")),
        (kept_col("gps_count_b"), kept_col("tool_calls_b")),
    )
    tstamp = pc.fill_null(kept_col("tstamp"), 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
    propensity = pc.fill_null(kept_col("propensity"), math.nan).to_numpy(zero_copy_only=False).astype(np.float64)
    voter, voters = _voters(kept_col("judge"))
    address, addresses = _voters(kept_col(ADDRESS)) if ADDRESS in col else (None, [])
    truth = {name: _no_empty_text(kept_col(name)) for name in TRUTH_TEXT} | {
        name: kept_col(name) for name in TRUTH_NUMBERS
    }
    categories = _categories(kept_col("language_code"), kept_col("language"), kept_col("categories"), gate_a, gate_b)
    _regions(categories, truth)
    log = VoteLog(
        contenders=contenders,
        a=a,
        b=b,
        outcome=outcome.astype(np.float64, copy=False),
        features_a=features_a,
        features_b=features_b,
        tstamp=tstamp,
        gate={name: bool(is_gate[i]) for i, name in enumerate(contenders)},
        categories=categories,
        labelled=_labelled(truth, model_a, model_b, outcome),
        voter=voter,
        voters=voters,
        address=address,
        addresses=addresses,
        propensity=propensity,
    )
    return log, dict(sorted(excluded.items()))


def release_arrow_memory() -> None:
    """Hand the memory of freed Arrow tables back to the system. Arrow's
    allocator keeps it for reuse, and the fits that follow allocate with
    numpy: without this a 10M-vote table (4-5 GB) stays resident through them."""
    pa.default_memory_pool().release_unused()


def _array(column: pa.ChunkedArray) -> pa.Array:
    if column.num_chunks == 1:
        return column.chunk(0)
    if pa.types.is_dictionary(column.type):
        column = column.unify_dictionaries()
    return column.combine_chunks()


def _empty(array: pa.Array) -> bool:
    return bool(array.null_count == len(array))


def _index_in(array: pa.Array, values: Sequence[str]) -> np.ndarray:
    """Per row the index of its text in `values`, -1 for another text or none
    (one hash per row, then a lookup per distinct text)."""
    encoded = pc.dictionary_encode(array)
    position = {v: i for i, v in enumerate(values)}
    lookup = np.array([position.get(v, -1) for v in encoded.dictionary.to_pylist()] + [-1], dtype=np.int64)
    indices = pc.fill_null(encoded.indices, len(encoded.dictionary)) if encoded.null_count else encoded.indices
    return np.asarray(lookup[indices.to_numpy(zero_copy_only=False)])


def _valid(col: dict[str, pa.Array], names: _Names, winner: np.ndarray) -> bool:
    """What `format.validate_row` checks, on the columns ranking reads (a
    column with no values has nothing to refuse). Contender names are
    checked once per distinct name."""
    col = {name: array for name, array in col.items() if not _empty(array) or name in ("model_a", "model_b", "winner")}
    distinct = pa.array(names.values, pa.string())
    checks = [
        pc.all(pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(distinct)), 0)),
        pc.all(pc.less_equal(pc.utf8_length(distinct), 100)),
        pc.invert(pc.any(pc.match_substring(distinct, "\x00"))),
    ]
    if bool(np.any(names.a == names.b)) or bool(np.any(winner < 0)):
        return False
    if "tstamp" in col:
        tstamp = col["tstamp"]
        checks.append(pc.all(pc.and_(pc.greater_equal(tstamp, 0.0), pc.less_equal(tstamp, MAX_TSTAMP))))
    if "battle_status" in col:
        status = col["battle_status"]
        checks.append(pc.all(pc.or_(pc.is_null(status), pc.is_in(status, value_set=pa.array(list(BATTLE_STATUSES))))))
    if "language_code" in col:
        checks.append(pc.all(pc.less_equal(pc.utf8_length(col["language_code"]), MAX_LANGUAGE_CODE)))
    for name in ("judge", "language", "language_code"):
        if name in col:
            checks.append(pc.invert(pc.any(pc.match_substring(col[name], "\x00"))))
    if "propensity" in col:
        propensity = col["propensity"]
        checks.append(pc.all(pc.and_(pc.greater(propensity, 0.0), pc.less_equal(propensity, 1.0))))
    for name in ("gps_count_a", "gps_count_b", "tool_calls_a", "tool_calls_b"):
        if name in col:
            checks.append(pc.all(pc.greater_equal(col[name], 0)))
    for name, (entries, chars) in LIST_LIMITS.items():
        if name in col:
            entry = pc.list_flatten(col[name])
            checks.append(pc.equal(entry.null_count, 0))
            checks.append(pc.all(pc.less_equal(pc.list_value_length(col[name]), entries)))
            checks.append(pc.all(pc.less_equal(pc.utf8_length(entry), chars)))
    for name in ("judge", "language"):
        if name in col:
            checks.append(pc.all(pc.less_equal(pc.utf8_length(col[name]), TEXT_LIMITS[name])))
    checks += _truth_checks(col)
    # all() of an all-null column is null: nothing refused there
    return all(bool(c.as_py()) if c.as_py() is not None else True for c in checks)


def _truth_checks(col: dict[str, pa.Array]) -> list[pa.Scalar]:
    """`format._check_truth` on whole columns (absent columns hold nothing to refuse)."""
    checks = []
    for name in TRUTH_NUMBERS:
        if name in col:
            checks.append(pc.all(pc.and_(pc.greater_equal(col[name], 0.0), pc.less_equal(col[name], 20_100.0))))
    for name in ("country", "answer_country_a", "answer_country_b"):
        if name in col:
            checks.append(pc.all(pc.or_(pc.equal(col[name], ""), pc.match_substring_regex(col[name], "^[A-Z]{2}$"))))
    continent = col.get("continent")
    if continent is not None:
        names = pa.array(["", *CONTINENT_NAMES])
        checks.append(pc.all(pc.or_(pc.is_null(continent), pc.is_in(continent, value_set=names))))
    distances = [pc.is_valid(col[name]) for name in ("error_km_a", "error_km_b") if name in col]
    if distances:
        with_distance = distances[0] if len(distances) == 1 else pc.or_(*distances)
        if continent is None:
            checks.append(pc.invert(pc.any(with_distance)))
        else:
            no_label = pc.equal(pc.fill_null(continent, ""), "")
            checks.append(pc.invert(pc.any(pc.and_(with_distance, no_label))))
    return checks


def _exclusions(col: dict[str, pa.Array]) -> pa.Array:
    """Per vote the reason it does not count (null when it counts), as
    `filters.exclusion_reason` decides: the battle status, then the first flag
    (`not_anonymous` when `anony` is false), then a failed side."""
    none = pa.scalar(None, pa.string())
    rows = len(col["model_a"])
    if all(_empty(col[name]) for name in ("flags", "anony", "sides_done", "battle_status")):
        return pa.nulls(rows, pa.string())  # nothing to exclude: the common case of a plain file
    flags = col["flags"]
    has_flag = pc.greater(pc.fill_null(pc.list_value_length(flags), 0), 0)
    first_flag = pc.list_element(pc.if_else(has_flag, flags, pa.scalar(None, flags.type)), 0)
    not_anonymous = pc.equal(pc.fill_null(col["anony"], True), False)
    flag = pc.coalesce(first_flag, pc.if_else(not_anonymous, NOT_ANONYMOUS, none))
    side_failed = pc.equal(pc.fill_null(col["sides_done"], True), False)
    status = col["battle_status"]
    bad_status = pc.fill_null(pc.is_in(status, value_set=pa.array(list(EXCLUDED_BATTLE_STATUSES))), False)
    return pc.if_else(
        bad_status,
        status,
        pc.if_else(
            pc.is_valid(flag),
            pc.binary_join_element_wise("flagged:", flag, ""),
            pc.if_else(side_failed, "side_failed", none),
        ),
    )


def _no_empty_text(array: pa.Array) -> pa.Array:
    if _empty(array):
        return array
    return pc.if_else(pc.equal(pc.fill_null(array, ""), ""), pa.scalar(None, pa.string()), array)


def _regions(out: dict[str, np.ndarray], truth: dict[str, pa.Array]) -> None:
    """Add the region categories `regions.region_categories` gives each vote:
    the label's continent and country, else the country both answers agree on."""
    continent, country = truth["continent"], truth["country"]
    answer_a, answer_b = truth["answer_country_a"], truth["answer_country_b"]
    if all(_empty(v) for v in (continent, country, answer_a, answer_b)):
        return  # no labels and no answer countries: the common case of an unlabelled file
    # here: the gazetteer's tables cost a tenth of a second to load, and most files have no labels
    from arena.geo.gazetteer import country_display_name
    from arena.geo.reverse import continent_name

    labelled = pc.or_(pc.is_valid(continent), pc.is_valid(country))
    agreed = pc.if_else(
        pc.and_(pc.invert(labelled), pc.fill_null(pc.equal(answer_a, answer_b), False)),
        answer_a,
        pa.scalar(None, pa.string()),
    )
    found: dict[str, list[np.ndarray]] = {}
    rows = np.arange(len(continent))
    _group_text(found, continent, lambda c: CONTINENT_PREFIX + continent_name(c), rows)
    _group_text(found, country, lambda c: COUNTRY_PREFIX + country_display_name(c), rows)
    _group_text(found, agreed, lambda c: AGREED_PREFIX + country_display_name(c), rows)
    for name, parts in found.items():
        joined = np.concatenate([out[name], *parts]) if name in out else np.concatenate(parts)
        out[name] = np.sort(joined, kind="stable")


def _labelled(
    truth: dict[str, pa.Array], model_a: pa.Array, model_b: pa.Array, outcome: np.ndarray
) -> list[LabelledVote]:
    """The accuracy record of each vote on a labelled battle (those few, one by one)."""
    rows = np.flatnonzero(pc.is_valid(truth["continent"]).to_numpy(zero_copy_only=False))
    if not rows.size:
        return []
    take = pa.array(rows)
    values = {name: array.take(take).to_pylist() for name, array in truth.items()}
    names_a, names_b = model_a.take(take).to_pylist(), model_b.take(take).to_pylist()
    votes = []
    for i, row in enumerate(rows):
        country = values["country"][i]
        precision = values["label_precision_km"][i]
        votes.append(
            LabelledVote(
                names_a[i],
                names_b[i],
                float(outcome[row]),
                values["error_km_a"][i],
                values["error_km_b"][i],
                _hit(values["answer_country_a"][i], country),
                _hit(values["answer_country_b"][i], country),
                country,
                precision or 0.0,
            )
        )
    return votes


def _hit(answer: str | None, country: str | None) -> bool | None:
    return None if answer is None or country is None else answer == country


def _bools(array: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(array, False).to_numpy(zero_copy_only=False), dtype=bool)


def _features(
    metadata: tuple[np.ndarray, np.ndarray] | None,
    counts_a: tuple[pa.Array, pa.Array],
    counts_b: tuple[pa.Array, pa.Array],
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The style features per side (FEATURES order), as
    `style.feature_vector(format.side_counts(row))`, from conv_metadata's
    counts and each side's (gps_count, tool_calls) columns; None when any
    vote has no conv_metadata."""
    if metadata is None:
        return None, None
    out = []
    for counts, (gps, tools) in zip(metadata, (counts_a, counts_b), strict=True):
        columns = [counts[:, j] for j in range(counts.shape[1])] + [sum_counts([gps]), sum_counts([tools])]
        out.append(compact_counts(columns))
    return out[0], out[1]


def _voters(judge: pa.Array) -> tuple[np.ndarray, list[str]]:
    """Voter index per vote in order of first appearance; no judge is UNKNOWN_VOTER."""
    codes, values = _codes(judge, lambda v: v or None)
    return np.where(codes >= 0, codes, UNKNOWN_VOTER), values


def _codes(array: pa.Array, name: Callable[[str], str | None]) -> tuple[np.ndarray, list[str]]:
    """(code per row, names): each distinct text named once by `name` (None
    drops it: its rows and null rows get -1), names in order of first
    appearance, as a dictionary encoding of the named column would give."""
    if _empty(array):
        return np.full(len(array), -1, dtype=np.int64), []
    encoded = pc.dictionary_encode(array)
    named = [name(v) for v in encoded.dictionary.to_pylist()]
    kept = [n for n in named if n is not None]
    if len(set(kept)) != len(kept):  # two texts with one name: merge them in order of first appearance
        merged: dict[str, int] = {}
        lookup = np.full(len(named) + 1, -1, dtype=np.int64)
        first = _first_rows(_indices(encoded), len(named))
        for i in np.argsort(first, kind="stable"):
            if named[i] is not None:
                lookup[i] = merged.setdefault(named[i], len(merged))
        return lookup[_indices(encoded)], list(merged)
    lookup = np.full(len(named) + 1, -1, dtype=np.int64)  # the last entry: null rows
    keep = [i for i, n in enumerate(named) if n is not None]
    lookup[keep] = np.arange(len(keep))
    return lookup[_indices(encoded)], kept


def _indices(encoded: pa.DictionaryArray) -> np.ndarray:
    """A dictionary array's indices, nulls as len(dictionary)."""
    indices = encoded.indices
    if encoded.null_count:
        indices = pc.fill_null(indices, len(encoded.dictionary))
    return np.asarray(indices.to_numpy(zero_copy_only=False))


def _categories(
    code: pa.Array, language: pa.Array, lists: pa.Array, gate_a: np.ndarray, gate_b: np.ndarray
) -> dict[str, np.ndarray]:
    """Category name -> vote indices, as the row path's VoteLogBuilder collects them."""
    out: dict[str, list[np.ndarray]] = {}
    rows = np.arange(len(code))
    # language_code, else FastChat's language name unless it is "unknown"
    if not (_empty(code) and _empty(language)):
        by_code, code_names = _codes(code, lambda v: v or None)
        by_name, language_names = _codes(language, lambda v: None if v in ("", "unknown") else v)
        chosen = by_code
        if language_names:
            chosen = np.where(by_code >= 0, by_code, np.where(by_name >= 0, by_name + len(code_names), -1))
        _group(out, chosen, [f"language:{v}" for v in code_names + language_names], rows)
    # one byte a vote (ten million votes: nested np.where made two int64 arrays of 80 MB)
    kind = np.full(len(code), 2, dtype=np.int8)
    kind[gate_a & gate_b] = 1
    kind[gate_a != gate_b] = 0
    _group(out, kind, [GATE_VS_PLAIN, "gate only", PLAIN_ONLY], rows)
    del kind
    flat = pc.list_flatten(lists)
    if len(flat):
        parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
        _group_text(out, flat, lambda v: f"category:{v}", parents)
    # each part is in vote order already; a name with parts from two sources is merged
    return {
        name: parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts), kind="stable")
        for name, parts in out.items()
    }


def _group_text(
    out: dict[str, list[np.ndarray]], values: pa.Array, name: Callable[[str], str], rows: np.ndarray
) -> None:
    """`_group` by `name(text)` of each non-null text (named once per distinct text)."""
    codes, names = _codes(values, name)
    _group(out, codes, names, rows)


def _group(out: dict[str, list[np.ndarray]], codes: np.ndarray, names: list[str], rows: np.ndarray) -> None:
    """Append `rows[i]` to `out[names[codes[i]]]` for every code >= 0, keeping
    vote order within each name; names no row has are left out."""
    if not names:
        return
    if len(names) <= 16:  # a few groups: one comparison pass each beats a sort
        for g, name in enumerate(names):
            part = rows[codes == g]
            if part.size:
                out.setdefault(name, []).append(part)
        return
    valid = codes >= 0
    index = codes[valid]
    order = np.argsort(index, kind="stable")
    counts = np.bincount(index, minlength=len(names))
    parts = np.split(rows[valid][order], np.cumsum(counts)[:-1])
    for name, part, count in zip(names, parts, counts, strict=True):
        if count:
            out.setdefault(name, []).append(part)
