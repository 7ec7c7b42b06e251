"""Battles claimed at the same moment, claimed together: one transaction for every stream waiting.

The first stream to open a pending battle claims it: the battle moves to `running`, its
answers to `streaming`, and the run gets the prompt, the photo and who plays which side.
Claimed one at a time, 500 streams opened at once made 500 transactions of five statements
each, one worker thread each, and the last stream waited seconds for its claim before a
contender was even asked. The replica's `BattleClaims` takes every claim waiting
(`arena.db.batches`) and makes them in one transaction of four statements, whatever their
number. On PostgreSQL a battle another replica claims at the same time is locked by the
first update, so exactly one of them wins it (should two batches deadlock, PostgreSQL
fails one, whose claims are then made alone).

The photos are read from the image store after the commit, each on its own: a photo that
is missing fails only its own claim (its battle, now held, is then marked failed).
When the transaction itself fails, each claim is made alone, so every error reaches its own
stream.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum
from typing import cast

from sqlalchemy import Connection, Table, bindparam, select, update
from sqlalchemy.orm import Session, sessionmaker

from arena.contenders.base import ContenderImage
from arena.db.batches import Batches
from arena.db.tables import Battle, Image, Response, utcnow
from arena.images.store import ImageStore

log = logging.getLogger(__name__)

BATTLES = cast(Table, Battle.__table__)  # Core: rows, not objects
RESPONSES = cast(Table, Response.__table__)
IMAGES = cast(Table, Image.__table__)
MAX_BATCH = 200  # claims in one transaction

CLAIM = (
    update(BATTLES)
    .where(BATTLES.c.id.in_(bindparam("ids", expanding=True)), BATTLES.c.status == "pending")
    .values(status="running", updated_at=bindparam("now"))
    .returning(BATTLES.c.id, BATTLES.c.prompt, BATTLES.c.image_sha256)
)
START_ANSWERS = (
    update(RESPONSES)
    .where(RESPONSES.c.battle_id.in_(bindparam("ids", expanding=True)), RESPONSES.c.status == "pending")
    .values(status="streaming", started_at=bindparam("now"))
    .returning(RESPONSES.c.battle_id, RESPONSES.c.side, RESPONSES.c.contender)
)
SIZES = select(IMAGES.c.sha256, IMAGES.c.width, IMAGES.c.height).where(
    IMAGES.c.sha256.in_(bindparam("shas", expanding=True))
)
EXISTING = select(BATTLES.c.id).where(BATTLES.c.id.in_(bindparam("ids", expanding=True)))


class Unclaimed(Enum):
    """Why a stream did not claim its battle."""

    TAKEN = "taken"  # another stream (here or on another replica) has it, or it is over
    MISSING = "missing"  # there is no such battle


@dataclass(frozen=True)
class Claim:
    """What a run needs of the battle it claimed."""

    prompt: str
    image: ContenderImage
    sides: dict[str, str]  # "a"/"b" -> contender


@dataclass(frozen=True)
class ClaimRow:
    """What the database says of a battle just claimed; its photo is read after the commit."""

    prompt: str
    sha256: str
    width: int
    height: int
    sides: dict[str, str]


class BattleClaims:
    """The replica's one claimer of battles (see the module)."""

    def __init__(self, sessions: sessionmaker[Session], images: ImageStore) -> None:
        self.sessions = sessions
        self.images = images
        self._batches: Batches[str, Claim | Unclaimed] = Batches(self._claim, max_batch=MAX_BATCH, name="battle-claims")

    async def claim(self, battle_id: str) -> Claim | Unclaimed:
        """The battle, claimed for this process; or why not. Raises when its claim could not
        be made or its photo not read."""
        return await self._batches.submit(battle_id)

    def _claim(self, battle_ids: list[str]) -> list[Claim | Unclaimed | Exception]:
        """In a worker thread: the batch in one transaction, else each claim alone."""
        try:
            with self.sessions.begin() as session:
                rows = claim_battles(session, battle_ids)
        except Exception as error:
            log.warning("%d claim(s) could not be made together (%s); claiming each alone", len(battle_ids), error)
            return [self._claim_alone(battle_id) for battle_id in battle_ids]
        photos: dict[str, ContenderImage] = {}  # battles of one photo read (and encode) it once
        return [self._with_photo(row, photos) for row in rows]

    def _claim_alone(self, battle_id: str) -> Claim | Unclaimed | Exception:
        try:
            with self.sessions.begin() as session:
                (row,) = claim_battles(session, [battle_id])
        except Exception as error:  # its own failure, for its own stream
            return error
        return self._with_photo(row, {})

    def _with_photo(
        self, row: ClaimRow | Unclaimed, photos: dict[str, ContenderImage]
    ) -> Claim | Unclaimed | Exception:
        if isinstance(row, Unclaimed):
            return row
        if row.sha256 not in photos:
            try:
                jpeg = self.images.get(row.sha256)
            except Exception as error:  # e.g. not in this replica's store: its battle fails
                return error
            photos[row.sha256] = ContenderImage(jpeg=jpeg, width=row.width, height=row.height, sha256=row.sha256)
        return Claim(row.prompt, photos[row.sha256], row.sides)


def claim_battles(session: Session, battle_ids: list[str]) -> list[ClaimRow | Unclaimed]:
    """Claim the pending ones of these battles in the session's transaction; one outcome per
    id, in order. An id asked twice is claimed by its first ask and `TAKEN` for the second."""
    connection: Connection = session.connection()
    now = utcnow()
    unique = sorted(set(battle_ids))
    won = {
        battle_id: (prompt, sha) for battle_id, prompt, sha in connection.execute(CLAIM, {"ids": unique, "now": now})
    }
    sides: dict[str, dict[str, str]] = {battle_id: {} for battle_id in won}
    sizes: dict[str, tuple[int, int]] = {}
    if won:
        for battle_id, side, contender in connection.execute(START_ANSWERS, {"ids": list(won), "now": now}):
            sides[battle_id][side] = contender
        shas = sorted({sha for _, sha in won.values()})
        sizes = {sha: (width, height) for sha, width, height in connection.execute(SIZES, {"shas": shas})}
    lost = [battle_id for battle_id in unique if battle_id not in won]
    existing = set(connection.execute(EXISTING, {"ids": lost}).scalars()) if lost else set()
    outcomes: list[ClaimRow | Unclaimed] = []
    handed: set[str] = set()
    for battle_id in battle_ids:
        if battle_id in won and battle_id not in handed:
            handed.add(battle_id)
            prompt, sha = won[battle_id]
            width, height = sizes[sha]  # a battle's image row exists (a foreign key)
            outcomes.append(ClaimRow(prompt, sha, width, height, sides[battle_id]))
        elif battle_id in won or battle_id in existing:
            outcomes.append(Unclaimed.TAKEN)
        else:
            outcomes.append(Unclaimed.MISSING)
    return outcomes
