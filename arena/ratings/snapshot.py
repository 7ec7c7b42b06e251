"""The snapshot contract: what `arena rank` writes, `/api/leaderboard` serves
and the leaderboard page shows. Pages and the API import this module only,
never the rating maths.

Sections that later rating work adds (robustness, accuracy, benchmark, ...)
ride along as extra keys until they are given a model here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from arena.db.tables import LeaderboardSnapshot

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


class Snapshot(BaseModel):
    """A leaderboard snapshot (`status` is "empty" before the first one)."""

    model_config = ConfigDict(extra="allow")

    status: str = "ok"
    message: str = ""
    computed_at: str | None = None
    votes_used: int = 0
    excluded: dict[str, int] = {}
    leaderboard: list[LeaderboardRow] = []
    style: StyleSection | None = None
    categories: list[dict[str, Any]] = []
    notes: list[str] = []

    @classmethod
    def empty(cls) -> Snapshot:
        return cls(status="empty", message=EMPTY_MESSAGE)


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
