"""The clean_battle row: one typed definition for export, import and rank.

`CleanBattleRow` is Chatbot Arena's `clean_battle` row (what FastChat's and
arena-rank's tooling read) plus GeoArena's fields, as a TypedDict: a row is
a plain dict (the writers, `json.dumps` and pyarrow take it as it is) whose
keys and value types mypy checks where rows are made. Everything else is
derived from it, never written out again:

* `COLUMNS` / `ANSWER_COLUMNS` / `TRAJECTORY_COLUMNS`: the column order of
  every export (CSV header, Parquet schema, JSONL key order); the answers only
  with `--answers`, the tool steps only with `--trajectories`;
* `arrow_schema()`: the Parquet writer's schema, and with `columns=` and
  `metadata=` the projection `arena rank` reads as columns;
* `columns_of_kind()`: which columns a CSV cell holds as JSON, an integer,
  a boolean, a number or text.

A new field (a trajectory column, a tool-use style count) is one line here.
The vote-to-row mapping itself is `format.to_row`.
"""

# no `from __future__ import annotations`: TypedDict must see NotRequired itself
import types
import typing
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict, Union

if TYPE_CHECKING:  # pyarrow loads only where rows are read or written as columns
    import pyarrow as pa

HEADERS = tuple(f"h{i}" for i in range(1, 7))


# Nested counts of FastChat's conv_metadata.
class HeaderCount(TypedDict):
    h1: int
    h2: int
    h3: int
    h4: int
    h5: int
    h6: int


class ListCount(TypedDict):
    ordered: int
    unordered: int


# functional form: "**" is no identifier
BoldCount = TypedDict("BoldCount", {"**": int, "__": int})
ItalicCount = TypedDict("ItalicCount", {"*": int, "_": int})


class ConvMetadata(TypedDict):
    """FastChat's per-battle token and markdown counts (what its style control reads)."""

    sum_user_tokens: int
    turns: int
    sum_assistant_a_tokens: int
    context_a_tokens: int
    header_count_a: HeaderCount
    list_count_a: ListCount
    bold_count_a: BoldCount
    italic_count_a: ItalicCount
    sum_assistant_b_tokens: int
    context_b_tokens: int
    header_count_b: HeaderCount
    list_count_b: ListCount
    bold_count_b: BoldCount
    italic_count_b: ItalicCount


class TrajectoryStep(TypedDict):
    """One tool call of a side's trajectory, as the voter was shown it."""

    tool: str
    arguments: str  # the call's arguments as JSON text: their shape is the tool's own
    ok: bool
    thought: str  # what the model said before the call
    observation: str  # what the tool gave back (clipped as the model saw it)
    image_refs: list[str]  # sha256 of the images the step made, in the image store


class DedupTag(TypedDict):
    high_freq: bool
    sampled: bool


Winner = Literal["model_a", "model_b", "tie", "tie (bothbad)"]


class CleanBattleRow(TypedDict):
    """One vote as exported; field order is the export's column order."""

    question_id: str
    model_a: str
    model_b: str
    winner: Winner
    judge: str  # the salted voter hash
    turn: int
    anony: bool
    language: str  # FastChat's English language name, "unknown" when not known
    tstamp: float  # seconds since 1970
    conv_metadata: ConvMetadata
    dedup_tag: DedupTag
    prompt: str
    image_sha256: str
    language_code: str | None
    gps_count_a: int
    gps_count_b: int
    gate_a: bool
    gate_b: bool
    tool_calls_a: int  # tool calls behind the answer (GATE's trajectory), 0 for a plain side
    tool_calls_b: int
    categories: list[str]
    flags: list[str]
    battle_status: str
    sides_done: bool
    # accuracy on battles with an opt-in location label: distances and the
    # label's country/continent only, never coordinates (null when unlabelled;
    # error_km_x null on a labelled battle: that answer named no place)
    error_km_a: float | None
    error_km_b: float | None
    country: str | None
    continent: str | None
    answer_country_a: str | None
    answer_country_b: str | None
    label_precision_km: float | None
    propensity: float | None  # the probability the sampler gave the pair
    # with `--answers` only
    answer_a: NotRequired[str]
    answer_b: NotRequired[str]
    # with `--trajectories` only: each side's tool steps in order ([] for a plain side)
    trajectory_a: NotRequired[list[TrajectoryStep]]
    trajectory_b: NotRequired[list[TrajectoryStep]]


def _fields(kind: type) -> dict[str, object]:
    return typing.get_type_hints(kind)


_HINTS = _fields(CleanBattleRow)
ANSWER_COLUMNS = ("answer_a", "answer_b")
TRAJECTORY_COLUMNS = ("trajectory_a", "trajectory_b")
COLUMNS: tuple[str, ...] = tuple(name for name in _HINTS if name not in CleanBattleRow.__optional_keys__)


def export_columns(*, answers: bool = False, trajectories: bool = False) -> tuple[str, ...]:
    """An export's columns, in order: every row's, then the ones asked for."""
    return COLUMNS + (ANSWER_COLUMNS if answers else ()) + (TRAJECTORY_COLUMNS if trajectories else ())


def arrow_schema(
    *,
    answers: bool = False,
    trajectories: bool = False,
    columns: Iterable[str] | None = None,
    metadata: Iterable[str] | None = None,
) -> "pa.Schema":
    """The rows' Arrow schema: every column (and the answers and trajectories
    when asked), or just `columns` in the contract's order; `metadata` keeps
    only those keys of conv_metadata."""
    import pyarrow as pa

    names = export_columns(answers=answers, trajectories=trajectories)
    if columns is not None:
        wanted = set(columns)
        unknown = wanted - set(_HINTS)
        if unknown:
            raise KeyError(f"not clean_battle columns: {', '.join(sorted(unknown))}")
        names = tuple(name for name in _HINTS if name in wanted)
    fields = []
    for name in names:
        kind = arrow_type(_HINTS[name])
        if name == "conv_metadata" and metadata is not None:
            keep = set(metadata)
            kind = pa.struct([field for field in kind if field.name in keep])
        fields.append(pa.field(name, kind))
    return pa.schema(fields)


def arrow_type(hint: object) -> "pa.DataType":
    """The Arrow type of one annotation (every Arrow field is nullable, so `X | None` is X)."""
    import pyarrow as pa

    hint = _plain(hint)
    if typing.get_origin(hint) is list:
        return pa.list_(arrow_type(typing.get_args(hint)[0]))
    if typing.is_typeddict(hint):
        return pa.struct([pa.field(name, arrow_type(sub)) for name, sub in _fields(hint).items()])  # type: ignore[arg-type]
    scalars = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
    if hint in scalars:
        return scalars[hint]
    raise TypeError(f"no Arrow type for {hint!r}")


CellKind = Literal["json", "integer", "boolean", "number", "text"]


def cell_kind(name: str) -> CellKind:
    """How a CSV cell holds this column's value: nested values as JSON text."""
    hint = _plain(_HINTS[name])
    if typing.get_origin(hint) is list or typing.is_typeddict(hint):
        return "json"
    kinds: dict[object, CellKind] = {int: "integer", bool: "boolean", float: "number", str: "text"}
    return kinds[hint]


def columns_of_kind(kind: CellKind) -> tuple[str, ...]:
    """The columns (optional ones included) whose CSV cells are of this kind."""
    return tuple(name for name in _HINTS if cell_kind(name) == kind)


def _plain(hint: object) -> object:
    """`X | None` -> X (every Arrow field and CSV cell may be null); a Literal -> its values' type."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _plain(inner)
    if origin is Literal:
        return type(typing.get_args(hint)[0])
    return hint
