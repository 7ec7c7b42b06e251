"""Vote counts per contender, for the new-contender boost and `arena models`."""

from __future__ import annotations

from sqlalchemy import func, select, union_all
from sqlalchemy.orm import Session

from arena.db.tables import Battle, Vote


def vote_counts(session: Session) -> dict[str, int]:
    """How many votes each contender has taken part in (either side)."""
    sides = union_all(
        select(Battle.model_a.label("contender")).join(Vote, Vote.battle_id == Battle.id),
        select(Battle.model_b.label("contender")).join(Vote, Vote.battle_id == Battle.id),
    ).subquery()
    rows = session.execute(select(sides.c.contender, func.count()).group_by(sides.c.contender))
    return {str(name): int(count) for name, count in rows}
