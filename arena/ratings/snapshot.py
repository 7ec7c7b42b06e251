"""The snapshot contract: what `arena rank` writes, `/api/leaderboard` serves
and the leaderboard page shows. Pages and the API import this module only,
never the rating maths.

Sections that later rating work adds (robustness, accuracy, benchmark, ...)
ride along as extra keys until they are given a model here.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from arena.db.tables import LeaderboardSnapshot
from arena.ratings.options import BASE, SCALE

# read by visitors: what to do, not which command an operator runs
EMPTY_MESSAGE = "No leaderboard yet. Vote on a few battles in the arena: the ratings appear here shortly after."


class LeaderboardRow(BaseModel):
    """One contender on the board; `rating` is the point estimate."""

    model_config = ConfigDict(extra="allow")

    contender: str
    rating: float
    ci_low: float
    ci_high: float
    rank: int
    votes: int
    win_rate: float
    gate: bool = False
    provisional: bool = False
    elo: float | None = None


class StyleCoefficient(BaseModel):
    model_config = ConfigDict(extra="allow")

    feature: str
    coefficient: float
    ci_low: float
    ci_high: float


class StyleSection(BaseModel):
    """The style-adjusted fit: its coefficients and its own board."""

    model_config = ConfigDict(extra="allow")

    features: list[str]
    coefficients: list[StyleCoefficient]
    leaderboard: list[LeaderboardRow]
    converged: bool = True
    separated: bool = False


class Method(BaseModel):
    """How the snapshot was computed (RankOptions, as the page names them)."""

    model_config = ConfigDict(extra="allow")

    level: float = 0.95
    ci: str = "bootstrap"
    rounds: int | None = None
    anchor: str | None = None
    anchor_rating: float | None = None
    provisional_votes: int | None = None


class Matrices(BaseModel):
    """Row contender against column contender, in board order; null: never met."""

    model_config = ConfigDict(extra="allow")

    contenders: list[str]
    battles: list[list[int]]
    win_rate: list[list[float | None]]
    predicted_win_rate: list[list[float]]


class Category(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    votes: int
    too_few_votes: bool = False
    leaderboard: list[LeaderboardRow] = []


class RobustnessPair(BaseModel):
    model_config = ConfigDict(extra="allow")

    position: int
    upper: str
    lower: str
    votes: int | None


class Robustness(BaseModel):
    model_config = ConfigDict(extra="allow")

    votes_total: int = 0
    top_swap_votes: int | None = None
    pairs: list[RobustnessPair] = []


class Effect(BaseModel):
    """Rating points a term adds (GATE on a base model, or side A), with its interval."""

    model_config = ConfigDict(extra="allow")

    points: float
    ci_low: float
    ci_high: float
    contender: str | None = None


# The style-adjusted fit is shown once it is identified. Enough votes: ten per
# estimated parameter (contenders less one, plus the style features), the
# usual events-per-variable rule for logistic models (Peduzzi et al., 1996).
STYLE_VOTES_PER_PARAMETER = 10
# Bounded intervals: no real style effect moves a vote's log-odds by 10 per
# standard deviation (GeoArena's largest is 0.53), nor does a rating interval
# honestly span 10 log-odds (~1,700 points) either side.
STYLE_MAX_LOG_ODDS = 10.0
POINTS_PER_UNIT = SCALE / math.log(BASE)


class Snapshot(BaseModel):
    """A leaderboard snapshot (`status` is "empty" before the first one)."""

    model_config = ConfigDict(extra="allow")

    status: str = "ok"
    message: str = ""
    computed_at: str | None = None
    votes_used: int = 0
    excluded: dict[str, int] = {}
    method: Method = Method()
    leaderboard: list[LeaderboardRow] = []
    style: StyleSection | None = None
    matrices: Matrices | None = None
    categories: list[Category] = []
    gate_uplift: dict[str, Effect] = {}
    position: Effect | None = None
    robustness: Robustness | None = None
    notes: list[str] = []

    @classmethod
    def empty(cls) -> Snapshot:
        return cls(status="empty", message=EMPTY_MESSAGE)

    def style_withheld(self) -> str | None:
        """Why the style-adjusted view is not shown yet, for a visitor; None once
        the fit is identified (or when there is no style fit at all)."""
        style = self.style
        if style is None:
            return None
        parameters = max(len(self.leaderboard) - 1, 1) + len(style.features)
        needed = STYLE_VOTES_PER_PARAMETER * parameters
        if self.votes_used < needed:
            return (
                f"The style-adjusted ratings appear at {needed:,} votes, ten for each number the fit estimates "
                f"({len(self.leaderboard)} contenders and {len(style.features)} style features); "
                f"there are {self.votes_used:,} so far."
            )
        if not style.converged or style.separated or not _bounded(style):
            return (
                "With the votes so far, the style-adjusted fit cannot tell style apart from skill: "
                "its intervals have no useful bound. It appears here once more votes settle it."
            )
        return None


def _bounded(style: StyleSection) -> bool:
    for c in style.coefficients:
        if not all(math.isfinite(x) and abs(x) <= STYLE_MAX_LOG_ODDS for x in (c.ci_low, c.ci_high)):
            return False
    reach = STYLE_MAX_LOG_ODDS * POINTS_PER_UNIT
    for r in style.leaderboard:
        if not all(math.isfinite(x) and abs(x - r.rating) <= reach for x in (r.ci_low, r.ci_high)):
            return False
    return True


def store_snapshot(sessions: sessionmaker[Session], snapshot: dict[str, Any]) -> int:
    """Keep a snapshot; the newest one is what the board shows."""
    Snapshot.model_validate(snapshot)  # a snapshot the page cannot read is never stored
    with sessions.begin() as session:
        row = LeaderboardSnapshot(
            computed_at=datetime.fromisoformat(snapshot["computed_at"]),
            votes_used=int(snapshot["votes_used"]),
            payload=snapshot,
        )
        session.add(row)
        session.flush()
        return int(row.id)


def latest_computed_at(session: Session) -> datetime | None:
    """When the newest snapshot was computed (timezone-aware), or None."""
    found: datetime | None = session.scalar(select(func.max(LeaderboardSnapshot.computed_at)))
    if found is None:
        return None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def latest_snapshot(session: Session) -> dict[str, Any] | None:
    row = session.scalars(
        select(LeaderboardSnapshot)
        .order_by(LeaderboardSnapshot.computed_at.desc(), LeaderboardSnapshot.id.desc())
        .limit(1)
    ).first()
    return None if row is None else dict(row.payload)


def describe(robustness: dict[str, Any] | None) -> str | None:
    """The figure in words for the page: "#1 would change if 14 votes were removed"."""
    if not robustness or not robustness.get("pairs"):
        return None
    votes = robustness["pairs"][0]["votes"]
    if votes is None:
        return "#1 would not change by removing votes alone."
    if votes == 0:
        return "#1 and #2 are tied."
    total = robustness.get("votes_total") or 0
    share = f" (out of {total:,})" if total else ""
    return f"#1 would change if {votes:,} vote{'s' if votes != 1 else ''} were removed{share}."
