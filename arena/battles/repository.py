"""Every query the battle flow makes, in one place."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, cast

from sqlalchemy import Table, Update, bindparam, delete, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, joinedload, selectinload

from arena.db.tables import Battle, GatekeeperRejection, Image, Response, UploadCount, Vote, style_columns, utcnow

FINISHED = ("ready", "failed", "abandoned", "voted")
RESPONSES = cast(Table, Response.__table__)


def save_image(session: Session, sha256: str, width: int, height: int, size_bytes: int) -> None:
    if session.get(Image, sha256) is None:
        try:
            with session.begin_nested():
                session.add(Image(sha256=sha256, width=width, height=height, size_bytes=size_bytes))
        except IntegrityError:
            pass  # another request stored the same photo between our read and our insert


def create_battle(
    session: Session,
    *,
    prompt: str,
    image_sha256: str,
    contenders: tuple[str, str],
    gates: tuple[bool, bool],
    client_hash: str,
    ip_hash: str,
    language: str | None,
    categories: list[str],
    propensity: float | None = None,
    starter_hash: str = "",
    unsure: bool = False,
) -> Battle:
    battle = Battle(
        prompt=prompt,
        image_sha256=image_sha256,
        model_a=contenders[0],
        model_b=contenders[1],
        status="pending",
        client_hash=client_hash,
        ip_hash=ip_hash,
        language=language,
        categories=categories,
        flags=[],
        propensity=propensity,
        starter_hash=starter_hash,
        unsure=unsure,
    )
    session.add(battle)
    session.flush()
    for side, name, gate in zip("ab", contenders, gates, strict=True):
        session.add(Response(battle_id=battle.id, side=side, contender=name, gate=gate, status="pending"))
    session.flush()
    return battle


def count_upload(session: Session, ip_hash: str, now: datetime) -> int:
    """Count one more upload attempt from an address and return its attempts in the last
    minute (this one included). One atomic upsert: parallel uploads, on any replica, each
    get a different count, so exactly `limit` of them pass."""
    minute = int(now.timestamp() // 60)
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    row = insert(UploadCount).values(ip_hash=ip_hash, minute=minute, count=1)
    statement = row.on_conflict_do_update(
        index_elements=[UploadCount.ip_hash, UploadCount.minute], set_={"count": UploadCount.count + 1}
    ).returning(UploadCount.count)
    this_minute = int(session.execute(statement).scalar_one())
    previous = (
        session.scalar(
            select(UploadCount.count).where(UploadCount.ip_hash == ip_hash, UploadCount.minute == minute - 1)
        )
        or 0
    )
    # a sliding minute: the previous one weighted by how much of it is still within 60 s
    share = 1 - (now.timestamp() % 60) / 60
    session.execute(delete(UploadCount).where(UploadCount.ip_hash == ip_hash, UploadCount.minute < minute - 1))
    return this_minute + int(previous * share)


def battle_exists(session: Session, battle_id: str) -> bool:
    return session.scalar(select(Battle.id).where(Battle.id == battle_id)) is not None


def get_battle(session: Session, battle_id: str, *, with_responses: bool = False) -> Battle | None:
    query = select(Battle).where(Battle.id == battle_id)
    if with_responses:
        query = query.options(selectinload(Battle.responses), selectinload(Battle.vote))
    return session.scalars(query).one_or_none()


def battle_with_answers(session: Session, battle_id: str) -> Battle | None:
    """A battle with its two answers in one query (what a vote needs)."""
    query = select(Battle).where(Battle.id == battle_id).options(joinedload(Battle.responses))
    return session.scalars(query).unique().one_or_none()


def still_pending(session: Session, battle_ids: Collection[str]) -> set[str]:
    """Which of these battles no stream has started yet."""
    return set(session.scalars(select(Battle.id).where(Battle.id.in_(battle_ids), Battle.status == "pending")))


def abandon_if_stale(session: Session, battle_id: str, older_than: timedelta) -> bool:
    """A battle left running by a replica that died is marked abandoned."""
    cutoff: datetime = utcnow() - older_than
    result = session.execute(
        update(Battle)
        .where(Battle.id == battle_id, Battle.status == "running", Battle.updated_at < cutoff)
        .values(status="abandoned", updated_at=utcnow())
    )
    return bool(result.rowcount == 1)  # type: ignore[attr-defined]


def renew_leases(session: Session, battle_ids: Collection[str]) -> None:
    """The replica running these battles says it is still at them (see `abandon_stale`)."""
    session.execute(
        update(Battle).where(Battle.id.in_(battle_ids), Battle.status == "running").values(updated_at=utcnow())
    )


def abandon_stale(session: Session, older_than: timedelta) -> int:
    """Battles whose lease ran out (their replica was killed, or lost the database for longer
    than the lease) are marked abandoned, with their unfinished sides; returns how many."""
    cutoff: datetime = utcnow() - older_than
    stale = list(session.scalars(select(Battle.id).where(Battle.status == "running", Battle.updated_at < cutoff)))
    if not stale:
        return 0
    session.execute(
        update(Response)
        .where(Response.battle_id.in_(stale), Response.status.in_(("pending", "streaming")))
        .values(status="abandoned", finished_at=utcnow())
    )
    result = session.execute(
        update(Battle)
        .where(Battle.id.in_(stale), Battle.status == "running", Battle.updated_at < cutoff)
        .values(status="abandoned", updated_at=utcnow())
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def update_response(session: Session, battle_id: str, side: str, **values: Any) -> None:
    if "style" in values:  # the counts as integers too, for ranking
        values |= style_columns(values["style"])
    params = {f"new_{name}": value for name, value in values.items()}
    session.execute(_answer_update(tuple(values)), {"answer_battle": battle_id, "answer_side": side, **params})


@lru_cache(maxsize=16)
def _answer_update(columns: tuple[str, ...]) -> Update:
    """An answer's update of these columns, built once: on the Core table (an ORM update first
    works out which loaded objects it changes) and with its values as parameters (coercing
    them into the statement anew was, with that, a tenth of a battle's CPU at 500 at once)."""
    return (
        update(RESPONSES)
        .where(RESPONSES.c.battle_id == bindparam("answer_battle"), RESPONSES.c.side == bindparam("answer_side"))
        .values({name: bindparam(f"new_{name}", type_=RESPONSES.c[name].type) for name in columns})
    )


def finish_battle(session: Session, battle_id: str, status: str, flags: list[str]) -> None:
    session.execute(
        update(Battle)
        .where(Battle.id == battle_id, Battle.status == "running")
        .values(status=status, flags=flags, updated_at=utcnow())
    )


def add_vote(session: Session, battle: Battle, choice: str, voter_hash: str) -> datetime | None:
    """Store the battle's vote and mark it voted; None when another request voted first.

    One insert that skips a second vote (the unique battle_id) instead of a savepoint
    around an insert that fails: two round trips fewer per vote on PostgreSQL."""
    created_at = utcnow()
    insert = postgresql_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    stored = session.execute(
        insert(Vote)
        .values(battle_id=battle.id, choice=choice, voter_hash=voter_hash, created_at=created_at)
        .on_conflict_do_nothing(index_elements=["battle_id"])
        .returning(Vote.id)
    ).scalar_one_or_none()
    if stored is None:
        return None
    session.execute(update(Battle).where(Battle.id == battle.id).values(status="voted", updated_at=created_at))
    return created_at


def add_flag(session: Session, battle: Battle, flag: str) -> None:
    """Append a flag to a battle's flags (the export's `flags`; the rating job excludes flagged votes)."""
    if flag not in (battle.flags or []):
        battle.flags = [*(battle.flags or []), flag]
        session.execute(update(Battle).where(Battle.id == battle.id).values(flags=battle.flags))


def count_rejection(session: Session, reason: str) -> None:
    # An increment in SQL (SQLite has no FOR UPDATE), and a first row that
    # another replica may insert at the same moment.
    if _increment_rejection(session, reason):
        return
    try:
        with session.begin_nested():
            session.add(GatekeeperRejection(reason=reason, count=1))
    except IntegrityError:
        _increment_rejection(session, reason)


def _increment_rejection(session: Session, reason: str) -> bool:
    result = session.execute(
        update(GatekeeperRejection)
        .where(GatekeeperRejection.reason == reason)
        .values(count=GatekeeperRejection.count + 1)
    )
    return bool(result.rowcount == 1)  # type: ignore[attr-defined]
