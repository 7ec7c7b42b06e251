"""One vote as a Chatbot Arena `clean_battle` row, plus GeoArena's fields.

FastChat's and arena-rank's tooling read these rows unchanged: `model_a`,
`model_b`, `winner` (`model_a | model_b | tie | tie (bothbad)`), `judge`,
`turn`, `anony`, `language`, `tstamp` and `conv_metadata` (token, header,
list and bold counts per side, what their style control reads). Ours on
top: `prompt`, `image_sha256`, `language_code`, `gps_count_a/_b`,
`gate_a/_b`, `categories`, `flags`, `battle_status` and `sides_done` (so
a file ranks exactly like the database: the same votes are left out),
`propensity` (the probability the sampler gave the pair, null when unknown),
`tool_calls_a/_b`; with `--answers` the two final answers `answer_a/_b`, and
with `--trajectories` each side's tool steps `trajectory_a/_b`.

The fields and their types are `contract.CleanBattleRow`; `to_row` maps
one vote to its row. `validate_row` checks one parsed row and says what is
wrong in words; `row_flags`, `row_features` and `row_truth` read a valid
row back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from arena.answers.style import TOKEN, feature_vector
from arena.db.text import can_store
from arena.db.vocabulary import BATTLE_STATUSES
from arena.export import bounds
from arena.export.contract import ANSWER_COLUMNS as ANSWER_COLUMNS
from arena.export.contract import COLUMNS as COLUMNS
from arena.export.contract import HEADERS, CleanBattleRow, ConvMetadata, TrajectoryStep, Winner
from arena.export.contract import TRAJECTORY_COLUMNS as TRAJECTORY_COLUMNS

# Text that a spreadsheet would run as a formula, behind any quotes already
# added (so that a quote we add can always be told apart and taken off).
SPREADSHEET_FORMULA = re.compile(r"^'*[=+\-@\t\r]")


def spreadsheet_text(text: str) -> str:
    """A CSV cell of text (never a number) that a spreadsheet shows as text, not as a formula."""
    return "'" + text if SPREADSHEET_FORMULA.match(text) else text


WINNERS: dict[Winner, str] = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "both_bad"}
CHOICE_TO_WINNER: dict[str, Winner] = {v: k for k, v in WINNERS.items()}
# A FastChat vote cast with the names shown (`anony` false): kept, flagged, never
# rated, as FastChat's elo_analysis rates only anonymous battles.
NOT_ANONYMOUS = "not_anonymous"
SHA256 = re.compile(r"^[0-9a-f]{64}$")
MAX_LANGUAGE_CODE = bounds.TEXT_LIMITS["language_code"]  # battles.language
MAX_TSTAMP = 253402300799.0  # 9999-12-31T23:59:59Z, the last second a datetime holds


class FormatError(ValueError):
    """Rows that cannot be imported, each with its line number and reason."""

    def __init__(self, errors: list[str], total: int | None = None) -> None:
        self.errors = errors
        shown = "\n".join(errors[:20])
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} bad row(s); nothing was imported:\n{shown}{more}")


@dataclass(frozen=True)
class ExportVote:
    """What the exporter needs to know about one voted battle."""

    battle_id: str
    model_a: str
    model_b: str
    choice: str
    voter_hash: str
    voted_at: datetime
    prompt: str
    image_sha256: str
    language: str | None
    categories: list[str]
    flags: list[str]
    gate_a: bool
    gate_b: bool
    battle_status: str
    sides_done: bool
    counts_a: dict[str, Any]  # style.style_features of the final answers
    counts_b: dict[str, Any]
    answer_a: str | None = None
    answer_b: str | None = None
    truth: Truth | None = None
    propensity: float | None = None
    trajectory_a: Sequence[Mapping[str, Any]] | None = None  # stored steps, only when exported
    trajectory_b: Sequence[Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class Truth:
    """What an export may say about a battle's location label and its answers."""

    error_km_a: float | None
    error_km_b: float | None
    country: str | None  # the label's ISO alpha-2 (None: unlabelled)
    continent: str | None  # the label's continent name ("Asia")
    answer_country_a: str | None  # the country each answer commits to (any battle)
    answer_country_b: str | None
    label_precision_km: float | None = None  # how precise the label is (a typed country: 750 km)


def to_row(vote: ExportVote) -> CleanBattleRow:
    """The clean_battle row of one vote (keys in COLUMNS order)."""
    truth = vote.truth or NO_TRUTH
    row: CleanBattleRow = {
        "question_id": vote.battle_id,
        "model_a": vote.model_a,
        "model_b": vote.model_b,
        "winner": CHOICE_TO_WINNER[vote.choice],
        "judge": vote.voter_hash,
        "turn": 1,
        "anony": NOT_ANONYMOUS not in vote.flags,
        "language": language_name(vote.language),
        "tstamp": vote.voted_at.timestamp(),
        "conv_metadata": conv_metadata(vote.counts_a, vote.counts_b, prompt_tokens=len(TOKEN.findall(vote.prompt))),
        "dedup_tag": {"high_freq": False, "sampled": True},
        "prompt": vote.prompt,
        "image_sha256": vote.image_sha256,
        "language_code": vote.language,
        "gps_count_a": int(vote.counts_a.get("gps_count", 0)),
        "gps_count_b": int(vote.counts_b.get("gps_count", 0)),
        "gate_a": vote.gate_a,
        "gate_b": vote.gate_b,
        "tool_calls_a": int(vote.counts_a.get("tool_calls", 0)),
        "tool_calls_b": int(vote.counts_b.get("tool_calls", 0)),
        "categories": list(vote.categories),
        "flags": list(vote.flags),
        "battle_status": vote.battle_status,
        "sides_done": vote.sides_done,
        "error_km_a": truth.error_km_a,
        "error_km_b": truth.error_km_b,
        "country": truth.country,
        "continent": truth.continent,
        "answer_country_a": truth.answer_country_a,
        "answer_country_b": truth.answer_country_b,
        "label_precision_km": truth.label_precision_km,
        "propensity": vote.propensity,
    }
    if vote.answer_a is not None and vote.answer_b is not None:
        row["answer_a"] = vote.answer_a
        row["answer_b"] = vote.answer_b
    if vote.trajectory_a is not None and vote.trajectory_b is not None:
        row["trajectory_a"] = trajectory_steps(vote.trajectory_a)
        row["trajectory_b"] = trajectory_steps(vote.trajectory_b)
    return row


def trajectory_steps(stored: Sequence[Mapping[str, Any]]) -> list[TrajectoryStep]:
    """A side's stored steps (`ToolStep` as the runner kept it) as export rows."""
    return [
        {
            "tool": str(step.get("tool", "")),
            "arguments": json.dumps(step.get("args") or {}, ensure_ascii=False, sort_keys=True),
            "ok": bool(step.get("ok", True)),
            "thought": str(step.get("thought") or ""),
            "observation": str(step.get("observation") or ""),
            "image_refs": [str(ref) for ref in step.get("image_refs") or []],
        }
        for step in stored
    ]


def stored_steps(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Back from a (validated) row's steps to the stored shape."""
    return [
        {
            "tool": step["tool"],
            "args": json.loads(step.get("arguments") or "{}"),
            "observation": step.get("observation") or "",
            "thought": step.get("thought") or "",
            "image_refs": list(step.get("image_refs") or []),
            "ok": bool(step.get("ok", True)),
        }
        for step in steps
    ]


NO_TRUTH = Truth(None, None, None, None, None, None)


def row_truth(row: Mapping[str, Any]) -> Truth:
    """The accuracy fields of a (validated) row."""
    return Truth(
        _km(row.get("error_km_a")),
        _km(row.get("error_km_b")),
        row.get("country") or None,
        row.get("continent") or None,
        row.get("answer_country_a") or None,
        row.get("answer_country_b") or None,
        _km(row.get("label_precision_km")),
    )


def _km(value: Any) -> float | None:
    return None if value is None else float(value)


def conv_metadata(counts_a: Mapping[str, Any], counts_b: Mapping[str, Any], *, prompt_tokens: int = 0) -> ConvMetadata:
    """FastChat's conv_metadata from two `style_features` results; with one
    turn the user's tokens and each side's context are the prompt's tokens."""
    meta: dict[str, Any] = {"sum_user_tokens": prompt_tokens, "turns": 1}
    for side, counts in (("a", counts_a), ("b", counts_b)):
        meta[f"sum_assistant_{side}_tokens"] = int(counts.get("tokens", 0))
        meta[f"context_{side}_tokens"] = prompt_tokens
        meta[f"header_count_{side}"] = {h: int(counts.get("header_count", {}).get(h, 0)) for h in HEADERS}
        lists = counts.get("list_count", {})
        meta[f"list_count_{side}"] = {k: int(lists.get(k, 0)) for k in ("ordered", "unordered")}
        bold = counts.get("bold_count", {})
        meta[f"bold_count_{side}"] = {k: int(bold.get(k, 0)) for k in ("**", "__")}
        italic = counts.get("italic_count", {})
        meta[f"italic_count_{side}"] = {k: int(italic.get(k, 0)) for k in ("*", "_")}
    return cast(ConvMetadata, meta)  # the keys are ConvMetadata's, spelt per side


def row_flags(row: Mapping[str, Any]) -> list[str]:
    """The row's flags, plus NOT_ANONYMOUS when `anony` is false."""
    flags = list(row.get("flags") or [])
    if row.get("anony") is False and NOT_ANONYMOUS not in flags:
        flags.append(NOT_ANONYMOUS)
    return flags


def side_counts(row: Mapping[str, Any], side: str) -> dict[str, Any]:
    """Back from a row to `style_features`-shaped counts for one side."""
    meta = row.get("conv_metadata") or {}
    return {
        "tokens": meta.get(f"sum_assistant_{side}_tokens", 0) or 0,
        "header_count": dict(meta.get(f"header_count_{side}") or {}),
        "list_count": dict(meta.get(f"list_count_{side}") or {}),
        "bold_count": dict(meta.get(f"bold_count_{side}") or {}),
        "italic_count": dict(meta.get(f"italic_count_{side}") or {}),
        "gps_count": row.get(f"gps_count_{side}", 0) or 0,
        "tool_calls": row.get(f"tool_calls_{side}", 0) or 0,
    }


def row_features(row: Mapping[str, Any]) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """The style features of each side, or None without conv_metadata."""
    if not row.get("conv_metadata"):
        return None
    return feature_vector(side_counts(row, "a")), feature_vector(side_counts(row, "b"))


def language_name(code: str | None) -> str:
    """ISO 639 code -> English name as FastChat writes it ("English"); "unknown" otherwise."""
    if not code:
        return "unknown"
    import pycountry  # here: its tables take a fifth of a second to load, and `arena rank` never needs them

    base = code.split("-")[0].split("_")[0].lower()
    found = pycountry.languages.get(alpha_2=base) if len(base) == 2 else pycountry.languages.get(alpha_3=base)
    return found.name if found else code


def validate_row(row: Any) -> list[str]:
    """Reasons this row cannot be imported (empty when it is fine)."""
    if not isinstance(row, Mapping):
        return ["a row must be a JSON object"]
    problems: list[str] = []
    for key in ("model_a", "model_b"):
        value = row.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{key} must be a non-empty string")
    if isinstance(row.get("model_a"), str) and row.get("model_a") == row.get("model_b"):
        problems.append("model_a and model_b are the same contender")
    if row.get("winner") not in WINNERS:
        problems.append(f"winner must be one of {', '.join(WINNERS)}, got {row.get('winner')!r}")
    qid = row.get("question_id")
    if qid is not None and not isinstance(qid, str | int):
        problems.append("question_id must be a string")
    tstamp = row.get("tstamp")
    if tstamp is not None and (
        isinstance(tstamp, bool) or not isinstance(tstamp, int | float) or not 0 <= tstamp <= MAX_TSTAMP
    ):
        problems.append(f"tstamp must be a number of seconds since 1970, got {tstamp!r}")
    sha = row.get("image_sha256")
    if sha not in (None, "") and (not isinstance(sha, str) or not SHA256.match(sha)):
        problems.append("image_sha256 must be 64 lowercase hex characters")
    for key in ("categories", "flags"):
        value = row.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            problems.append(f"{key} must be a list of strings")
    for key in ("gate_a", "gate_b", "anony", "sides_done"):
        value = row.get(key)
        if value is not None and not isinstance(value, bool):
            problems.append(f"{key} must be true or false")
    for key in ("gps_count_a", "gps_count_b", "tool_calls_a", "tool_calls_b"):
        value = row.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            problems.append(f"{key} must be a whole number >= 0")
    for key in TRAJECTORY_COLUMNS:
        steps = row.get(key)
        if steps is not None and not (isinstance(steps, list) and len(steps) > bounds.MAX_STEPS):
            problems += [f"{key}: {problem}" for problem in _step_problems(steps)]
    for key in ("prompt", "judge", "language", "language_code", "answer_a", "answer_b", "battle_status"):
        value = row.get(key)
        if value is not None and not isinstance(value, str):
            problems.append(f"{key} must be a string")
    # what the databases would refuse halfway through an import: NUL (PostgreSQL) and lone
    # surrogates, which JSON's `\ud800` escapes produce and no UTF-8 codec encodes
    for key in ("model_a", "model_b", "prompt", "judge", "language", "language_code", "answer_a", "answer_b"):
        value = row.get(key)
        if isinstance(value, str) and not can_store(value):
            problems.append(f"{key} must not contain NUL characters or broken Unicode (a lone surrogate)")
    problems.extend(bounds.row_problems(row))  # every list and string within what an import takes
    status = row.get("battle_status")
    if status is not None and status not in BATTLE_STATUSES:
        problems.append(f"battle_status must be one of {', '.join(BATTLE_STATUSES)}, got {status!r}")
    propensity = row.get("propensity")
    if propensity is not None and (
        isinstance(propensity, bool) or not isinstance(propensity, int | float) or not 0 < propensity <= 1
    ):
        problems.append(f"propensity must be a probability in (0, 1], got {propensity!r}")
    meta = row.get("conv_metadata")
    if meta is not None:
        problems.extend(_check_metadata(meta))
    problems.extend(_check_truth(row))
    return problems


CONTINENT_NAMES = ("Africa", "Antarctica", "Asia", "Europe", "North America", "Oceania", "South America")


def _check_truth(row: Mapping[str, Any]) -> list[str]:
    problems = []
    for key in ("error_km_a", "error_km_b", "label_precision_km"):
        value = row.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 20_100
        ):
            problems.append(f"{key} must be a distance in km between 0 and 20,100 (half the Earth), or null")
    for key in ("country", "answer_country_a", "answer_country_b"):
        value = row.get(key)
        if value not in (None, "") and (not isinstance(value, str) or not re.fullmatch(r"[A-Z]{2}", value)):
            problems.append(f"{key} must be an ISO 3166-1 alpha-2 code such as JP, or null")
    continent = row.get("continent")
    if continent not in (None, "") and continent not in CONTINENT_NAMES:
        problems.append(f"continent must be one of {', '.join(CONTINENT_NAMES)}, or null")
    if any(row.get(k) is not None for k in ("error_km_a", "error_km_b")) and not row.get("continent"):
        problems.append("error_km_a/error_km_b need the label's continent (a distance without a label)")
    return problems


def _check_metadata(meta: Any) -> list[str]:
    if not isinstance(meta, Mapping):
        return ["conv_metadata must be an object"]
    problems = []
    for side in ("a", "b"):
        tokens = meta.get(f"sum_assistant_{side}_tokens")
        # stored in responses.output_tokens, a 32-bit integer on PostgreSQL
        if tokens is not None and not (_count(tokens) and tokens < 2**31):
            problems.append(f"conv_metadata.sum_assistant_{side}_tokens must be a whole number >= 0 (and below 2^31)")
        for group in ("header_count", "list_count", "bold_count", "italic_count"):
            value = meta.get(f"{group}_{side}")
            if value is None:
                continue
            if not isinstance(value, Mapping) or not all(v is None or _count(v) for v in value.values()):
                problems.append(f"conv_metadata.{group}_{side} must map names to whole numbers >= 0")
    return problems


def _count(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and value >= 0 and float(value).is_integer()


def _step_problems(steps: Any) -> list[str]:
    """What is wrong with one side's trajectory, in words (the first few)."""
    if not isinstance(steps, list):
        return ["must be a list of steps"]
    problems: list[str] = []
    for number, step in enumerate(steps, 1):
        if not isinstance(step, Mapping) or not isinstance(step.get("tool"), str) or not step["tool"]:
            problems.append(f"step {number} must be an object with a tool name")
            continue
        arguments = step.get("arguments")
        try:
            ok = arguments is None or (isinstance(arguments, str) and isinstance(json.loads(arguments), dict))
        except ValueError:
            ok = False
        if not ok:
            problems.append(f"step {number}: arguments must be a JSON object as text")
        for key in ("thought", "observation"):
            if step.get(key) is not None and not isinstance(step[key], str):
                problems.append(f"step {number}: {key} must be a string")
        refs = step.get("image_refs")
        if refs is not None and (
            not isinstance(refs, list) or not all(isinstance(r, str) and SHA256.match(r) for r in refs)
        ):
            problems.append(f"step {number}: image_refs must be a list of sha256 hex strings")
        problems.extend(bounds.step_problems(number, step))
    total = bounds.trajectory_chars(steps)
    if total > bounds.MAX_TRAJECTORY_CHARS:
        problems.append(f"its steps hold {total:,} characters; the limit is {bounds.MAX_TRAJECTORY_CHARS:,}")
    return problems[:3]
