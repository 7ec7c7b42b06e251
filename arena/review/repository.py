"""Reviewers, their tokens and their reviews. Only a SHA-256 of a token is
stored: a leaked database does not hand out reviewer links."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import Select, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from arena.db.tables import Battle, Response, Review, Reviewer, Vote, utcnow

NAME_MAX = 100


class ReviewError(ValueError):
    """A reviewer command or review that cannot be done, said plainly."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def add_reviewer(session: Session, name: str) -> str:
    """A new reviewer (or a revoked one back) with a fresh token, returned once."""
    name = " ".join(name.split())
    if not name or len(name) > NAME_MAX:
        raise ReviewError(f"a reviewer's name must be 1 to {NAME_MAX} characters")
    token = secrets.token_urlsafe(24)
    existing = session.scalar(select(Reviewer).where(Reviewer.name == name))
    if existing is not None and existing.revoked_at is None:
        raise ReviewError(f"{name!r} already has a link; revoke it first (`arena reviewers revoke {name}`)")
    if existing is not None:
        existing.token_hash, existing.revoked_at = token_hash(token), None
    else:
        session.add(Reviewer(name=name, token_hash=token_hash(token)))
    session.flush()
    return token


def revoke_reviewer(session: Session, name: str) -> None:
    reviewer = session.scalar(select(Reviewer).where(Reviewer.name == name, Reviewer.revoked_at.is_(None)))
    if reviewer is None:
        raise ReviewError(f"no active reviewer named {name!r}")
    reviewer.revoked_at = utcnow()


def reviewer_for(session: Session, token: str) -> Reviewer | None:
    """The active reviewer holding `token`, or None."""
    if not token or len(token) > 200:
        return None
    return session.scalar(
        select(Reviewer).where(Reviewer.token_hash == token_hash(token), Reviewer.revoked_at.is_(None))
    )


@dataclass(frozen=True)
class ReviewerRow:
    name: str
    active: bool
    reviews: int


def list_reviewers(session: Session) -> list[ReviewerRow]:
    counts = dict(session.execute(select(Review.reviewer_id, func.count()).group_by(Review.reviewer_id)).all())
    return [
        ReviewerRow(r.name, r.revoked_at is None, int(counts.get(r.id, 0)))
        for r in session.scalars(select(Reviewer).order_by(Reviewer.name))
    ]


def _reviewable() -> Select[Battle]:
    # voted battles whose two answers both finished
    done = (
        select(Response.battle_id)
        .where(Response.status == "done")
        .group_by(Response.battle_id)
        .having(func.count() == 2)
    )
    return select(Battle).join(Vote, Vote.battle_id == Battle.id).where(Battle.id.in_(done))


def next_battle(session: Session, reviewer_id: int) -> Battle | None:
    """A voted battle this reviewer has not reviewed, drawn uniformly at random."""
    mine = select(Review.battle_id).where(Review.reviewer_id == reviewer_id)
    query = (
        _reviewable()
        .where(Battle.id.not_in(mine))
        .options(selectinload(Battle.responses))
        .order_by(func.random())
        .limit(1)
    )
    return session.scalar(query)


def remaining(session: Session, reviewer_id: int) -> int:
    mine = select(Review.battle_id).where(Review.reviewer_id == reviewer_id)
    return int(
        session.scalar(select(func.count()).select_from(_reviewable().where(Battle.id.not_in(mine)).subquery())) or 0
    )


def is_reviewable(session: Session, battle_id: str) -> bool:
    return session.scalar(_reviewable().where(Battle.id == battle_id)) is not None


def save_review(session: Session, battle_id: str, reviewer_id: int, choice: str, swapped: bool) -> None:
    """One review per reviewer per battle: the database's unique key decides."""
    try:
        with session.begin_nested():
            session.add(Review(battle_id=battle_id, reviewer_id=reviewer_id, choice=choice, swapped=swapped))
    except IntegrityError:
        raise ReviewError("you have already reviewed this battle") from None


@dataclass(frozen=True)
class ReviewRow:
    battle_id: str
    reviewer_id: int
    expert: str
    crowd: str


def review_rows(session: Session) -> list[ReviewRow]:
    rows = session.execute(
        select(Review.battle_id, Review.reviewer_id, Review.choice, Vote.choice)
        .join(Vote, Vote.battle_id == Review.battle_id)
        .order_by(Review.battle_id, Review.reviewer_id)
    )
    return [ReviewRow(*row) for row in rows]
