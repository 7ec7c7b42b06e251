"""The leaderboard: `/leaderboard` (page), `/api/leaderboard` (the latest
snapshot as JSON) and `/leaderboard.csv` (its board as CSV).

The page's context is the typed `Snapshot`; every figure on it is formatted
by `arena.web.figures`, once, on the server, and the page's script prints
those strings (it formats nothing), so each view shows the same numbers.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from arena.deps import AdminDep, SessionDep, TemplatesDep
from arena.export.format import spreadsheet_text
from arena.ratings.snapshot import EMPTY_MESSAGE, Effect, LeaderboardRow, Snapshot, describe, latest_snapshot
from arena.web import figures

router = APIRouter()


@router.get("/api/leaderboard", summary="The latest leaderboard snapshot", response_model=Snapshot)
def leaderboard_api(session: SessionDep) -> JSONResponse:
    """The latest snapshot as JSON; `{"status": "empty", ...}` before the first one.
    `style_withheld` says why the page does not show the style-adjusted fit yet."""
    snapshot = latest_snapshot(session)
    if snapshot is None:
        return JSONResponse(empty_snapshot())
    # served as stored, less what only the admin reads; the stored JSON was checked against the model
    withheld = Snapshot.model_validate(snapshot).style_withheld()
    return JSONResponse({"status": "ok", **public(snapshot), "style_withheld": withheld})


CSV_COLUMNS = (
    "rank",
    "contender",
    "rating",
    "ci_low",
    "ci_high",
    "votes",
    "win_rate",
    "elo",
    "gate",
    "provisional",
    "style_rating",
    "style_ci_low",
    "style_ci_high",
)


@router.get("/leaderboard.csv", summary="The latest board as CSV", response_class=Response)
def leaderboard_csv(session: SessionDep) -> Response:
    """One row per contender, as in the snapshot; the style columns stay empty
    while the page withholds the style-adjusted fit. The contender is the one
    text cell (names come from pool files and imported votes): one a spreadsheet
    would run as a formula gets a leading quote; figures stay numbers, minus sign and all."""
    stored = latest_snapshot(session)
    snapshot = Snapshot.model_validate(public(stored)) if stored else Snapshot.empty()
    style = {}
    if snapshot.style is not None and snapshot.style_withheld() is None:
        style = {r.contender: r for r in snapshot.style.leaderboard}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in snapshot.leaderboard:
        s = style.get(r.contender)
        writer.writerow(
            [r.rank, spreadsheet_text(r.contender), r.rating, r.ci_low, r.ci_high, r.votes, r.win_rate]
            + ["" if r.elo is None else r.elo, str(r.gate).lower(), str(r.provisional).lower()]
            + (["", "", ""] if s is None else [s.rating, s.ci_low, s.ci_high])
        )
    stamp = (snapshot.computed_at or "empty")[:19].replace(":", "")
    return Response(
        out.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="geoarena-leaderboard-{stamp}.csv"'},
    )


ADMIN_ONLY = ("anonymity",)  # how recognisable each contender is: a map for an attacker


def public(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot without what only the admin should read."""
    return {k: v for k, v in snapshot.items() if k not in ADMIN_ONLY}


@router.get("/api/admin/anonymity", summary="The latest anonymity audit (admin token)", dependencies=[AdminDep])
def anonymity_api(session: SessionDep) -> JSONResponse:
    """How well a text classifier identifies each contender, as the latest snapshot recorded it."""
    snapshot = latest_snapshot(session) or {}
    return JSONResponse({"computed_at": snapshot.get("computed_at"), "anonymity": snapshot.get("anonymity")})


@router.get("/leaderboard", response_class=HTMLResponse, include_in_schema=False)
def leaderboard_page(request: Request, session: SessionDep, templates: TemplatesDep) -> HTMLResponse:
    """Ratings with their intervals, the style view, charts and categories."""
    stored = latest_snapshot(session)
    page = LeaderboardPage(None if stored is None else Snapshot.model_validate(public(stored)))
    return templates.TemplateResponse(request, "leaderboard.html", {"page": page})


def empty_snapshot() -> dict[str, Any]:
    return Snapshot.empty().model_dump(
        include={
            "status",
            "message",
            "computed_at",
            "votes_used",
            "excluded",
            "leaderboard",
            "style",
            "categories",
        }
    )


@dataclass(frozen=True)
class BoardRow:
    """One contender's row as the page shows it: display strings, and the raw
    values the script sorts by."""

    contender: str
    gate: bool
    provisional: bool
    rank: int
    rating: str
    interval: str
    votes: str
    win_rate: str
    elo: str
    sort_keys: dict[str, float | str]

    @classmethod
    def of(cls, row: LeaderboardRow) -> BoardRow:
        return cls(
            contender=row.contender,
            gate=row.gate,
            provisional=row.provisional,
            rank=row.rank,
            rating=figures.points(row.rating),
            interval=figures.interval(row.ci_low, row.ci_high),
            votes=figures.count(row.votes),
            win_rate=figures.percent(row.win_rate),
            elo="" if row.elo is None else figures.points(row.elo),
            sort_keys={
                "rank": row.rank,
                "contender": row.contender.casefold(),
                "rating": row.rating,
                "votes": row.votes,
                "win_rate": row.win_rate,
                "elo": -1e9 if row.elo is None else row.elo,
            },
        )

    def cells(self) -> dict[str, Any]:
        """What the script needs to show this row (categories are filled by it)."""
        return {
            "contender": self.contender,
            "gate": self.gate,
            "rank": self.rank,
            "rating": self.rating,
            "interval": self.interval,
            "votes": self.votes,
            "win_rate": self.win_rate,
        }


@dataclass(frozen=True)
class LeaderboardPage:
    """Context of `leaderboard.html`: the typed snapshot (None before the
    first one) and every figure of it formatted for the page."""

    snapshot: Snapshot | None
    empty_message: str = EMPTY_MESSAGE

    @property
    def level(self) -> str:
        """The confidence level as the page names it: "95"."""
        return f"{figures.rounded((self.snapshot.method.level if self.snapshot else 0.95) * 100, 1).normalize():f}"

    @property
    def anchor_rating(self) -> str:
        rating = self.snapshot.method.anchor_rating if self.snapshot else None
        return "" if rating is None else figures.points(rating)

    @property
    def rows(self) -> list[LeaderboardRow]:
        return self.snapshot.leaderboard if self.snapshot else []

    @cached_property
    def plain(self) -> list[BoardRow]:
        return [BoardRow.of(r) for r in self.rows]

    @property
    def settled_rows(self) -> list[BoardRow]:
        """Rows with enough votes to be ranked with the rest."""
        return [r for r in self.plain if not r.provisional]

    @property
    def provisional_rows(self) -> list[BoardRow]:
        """Rows below the vote threshold, shown apart."""
        return [r for r in self.plain if r.provisional]

    @property
    def style_withheld(self) -> str | None:
        """Why the style-adjusted view is not offered yet, in words."""
        return self.snapshot.style_withheld() if self.snapshot else None

    @cached_property
    def style(self) -> list[BoardRow] | None:
        """The style-adjusted board, once its fit is identified."""
        if self.snapshot is None or self.snapshot.style is None or self.style_withheld:
            return None
        return [BoardRow.of(r) for r in self.snapshot.style.leaderboard]

    @property
    def style_settled_rows(self) -> list[BoardRow]:
        return [r for r in self.style or [] if not r.provisional]

    @property
    def style_provisional_rows(self) -> list[BoardRow]:
        return [r for r in self.style or [] if r.provisional]

    @property
    def coefficients(self) -> list[dict[str, Any]]:
        if self.style is None or self.snapshot is None or self.snapshot.style is None:
            return []
        return [
            {
                "feature": c.feature,
                "coefficient": figures.coefficient(c.coefficient),
                "interval": f"{figures.coefficient(c.ci_low)} to {figures.coefficient(c.ci_high)}",
                "value": c.coefficient,
                "low": c.ci_low,
                "high": c.ci_high,
            }
            for c in self.snapshot.style.coefficients
        ]

    @property
    def provisional_votes(self) -> int | None:
        return self.snapshot.method.provisional_votes if self.snapshot else None

    @property
    def robustness_sentence(self) -> str | None:
        """How fragile #1 is, in words ("#1 would change if 14 votes were removed")."""
        robustness = self.snapshot.robustness if self.snapshot else None
        return describe(robustness.model_dump() if robustness else None)

    @property
    def robustness_pairs(self) -> list[dict[str, Any]]:
        robustness = self.snapshot.robustness if self.snapshot else None
        return [
            {**p.model_dump(), "votes": None if p.votes is None else figures.count(p.votes)}
            for p in (robustness.pairs if robustness else [])
        ]

    @property
    def excluded(self) -> list[tuple[str, str]]:
        return [(reason, figures.count(n)) for reason, n in (self.snapshot.excluded if self.snapshot else {}).items()]

    @property
    def excluded_total(self) -> int:
        return sum(self.snapshot.excluded.values()) if self.snapshot else 0

    @property
    def gate_sentences(self) -> list[str]:
        """One sentence per base model whose GATE variant also played:
        "+gate adds 31 [12, 50] points to gpt-4o"."""
        uplift = self.snapshot.gate_uplift if self.snapshot else {}
        return [_uplift_sentence(base, entry) for base, entry in uplift.items()]

    @property
    def position_sentence(self) -> str | None:
        """What the left side is worth: "The left answer (A) gains 4 [-3, 11] points over the right one"."""
        position = self.snapshot.position if self.snapshot else None
        if position is None:
            return None
        p = figures.points
        if position.points >= 0:
            return (
                f"The left answer (A) gains {p(position.points)} [{p(position.ci_low)}, {p(position.ci_high)}] "
                "points over the right one (B)."
            )
        return (
            f"The left answer (A) loses {p(-position.points)} [{p(-position.ci_high)}, {p(-position.ci_low)}] "
            "points against the right one (B)."
        )

    @property
    def script_data(self) -> dict[str, Any]:
        """What the page's script draws: chart rows, the heat map, categories;
        figures already formatted here."""
        snap = self.snapshot
        if snap is None:
            return {"votes_used": 0, "views": {}}
        views = {"plain": _chart(snap.leaderboard)}
        if self.style is not None and snap.style is not None:
            views["style"] = _chart(snap.style.leaderboard)
        data: dict[str, Any] = {"votes_used": snap.votes_used, "views": views}
        if snap.matrices is not None:
            m = snap.matrices
            data["matrices"] = {
                "contenders": m.contenders,
                "battles": m.battles,
                # percentages rounded here: the script prints them as they are
                "win_rate": [[figures.percent_value(v) for v in row] for row in m.win_rate],
                "predicted_win_rate": [[figures.percent_value(v) for v in row] for row in m.predicted_win_rate],
            }
        data["categories"] = [
            {"too_few_votes": c.too_few_votes, "rows": [BoardRow.of(r).cells() for r in c.leaderboard]}
            for c in snap.categories
        ]
        return data

    @property
    def script_json(self) -> str:
        """`script_data`, safe inside <script type="application/json">."""
        text = json.dumps(self.script_data, ensure_ascii=False, separators=(",", ":"))
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _chart(rows: list[LeaderboardRow]) -> list[dict[str, Any]]:
    return [
        {
            "contender": r.contender,
            "gate": r.gate,
            "rating": r.rating,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "label": f"{r.contender}: {figures.points(r.rating)} ({figures.interval(r.ci_low, r.ci_high)}), "
            f"rank {r.rank}",
        }
        for r in rows
    ]


def _uplift_sentence(base: str, entry: Effect) -> str:
    p = figures.points
    suffix = (entry.contender or base).removeprefix(base) or "+gate"
    if entry.points >= 0:
        return f"{suffix} adds {p(entry.points)} [{p(entry.ci_low)}, {p(entry.ci_high)}] points to {base}."
    return f"{suffix} takes {p(-entry.points)} [{p(-entry.ci_high)}, {p(-entry.ci_low)}] points from {base}."
