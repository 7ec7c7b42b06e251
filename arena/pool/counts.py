"""Vote counts per contender (the new-contender boost, `arena models`) and the
latest snapshot's evidence (active sampling), read from the database."""

from __future__ import annotations

import time

from sqlalchemy import func, select, union_all
from sqlalchemy.orm import Session, sessionmaker

from arena.db.tables import Battle, LeaderboardSnapshot, Vote
from arena.pool.active import Evidence


def vote_counts(session: Session) -> dict[str, int]:
    """How many votes each contender has taken part in (either side)."""
    sides = union_all(
        select(Battle.model_a.label("contender")).join(Vote, Vote.battle_id == Battle.id),
        select(Battle.model_b.label("contender")).join(Vote, Vote.battle_id == Battle.id),
    ).subquery()
    rows = session.execute(select(sides.c.contender, func.count()).group_by(sides.c.contender))
    return {str(name): int(count) for name, count in rows}


class VoteCountCache:
    """Vote counts for sampling, re-read at most once a minute: the boost for
    new contenders needs them per battle, but they move slowly."""

    def __init__(self, sessions: sessionmaker[Session], ttl: float = 60.0) -> None:
        self.sessions = sessions
        self.ttl = ttl
        self._counts: dict[str, int] = {}
        self._read_at = float("-inf")

    def get(self) -> dict[str, int]:
        if time.monotonic() - self._read_at >= self.ttl:
            with self.sessions() as session:
                self._counts = vote_counts(session)
            self._read_at = time.monotonic()
        return self._counts


class EvidenceCache:
    """What the latest leaderboard snapshot says (strengths, battle counts), for
    active sampling; re-read at most once a minute, as snapshots come every few."""

    def __init__(self, sessions: sessionmaker[Session], ttl: float = 60.0) -> None:
        self.sessions = sessions
        self.ttl = ttl
        self._evidence: Evidence | None = None
        self._read_at = float("-inf")

    def get(self) -> Evidence | None:
        if time.monotonic() - self._read_at >= self.ttl:
            with self.sessions() as session:
                self._evidence = latest_evidence(session)
            self._read_at = time.monotonic()
        return self._evidence


def latest_evidence(session: Session) -> Evidence | None:
    """The sampler's view of the newest snapshot, or None before the first."""
    payload = session.scalars(
        select(LeaderboardSnapshot.payload)
        .order_by(LeaderboardSnapshot.computed_at.desc(), LeaderboardSnapshot.id.desc())
        .limit(1)
    ).first()
    return Evidence.from_snapshot(payload)
