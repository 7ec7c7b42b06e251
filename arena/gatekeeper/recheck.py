"""A second look at the battles the gatekeeper was unsure of.

An unsure battle runs (a wrong refusal would lose the person and their
photo); its vote counts unless a re-check answers that the prompt is not
geographic after all. Two can answer: the LLM judge of `[gatekeeper]`, which
`arena rank` asks about the unsure prompts not yet re-checked before each
fit (`recheck_unsure`), and a reviewer, with `arena unsure mark` (`record`,
which also overrules the judge). A `not_geographic` answer adds the battle
flag NOT_GEOGRAPHIC, so the rank job leaves its vote out as it leaves out
any flagged vote, and the snapshot counts it under `excluded`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from arena.db.tables import Battle

log = logging.getLogger(__name__)

GEOGRAPHIC, NOT_GEOGRAPHIC = "geographic", "not_geographic"
BATCH = 200  # unsure prompts a rank run re-checks at most: the rest wait for the next run
CONCURRENT = 4  # judge calls at once


class Judge(Protocol):
    name: str

    async def judge(self, prompt: str) -> tuple[bool, str]: ...


@dataclass(frozen=True)
class RecheckTally:
    asked: int
    not_geographic: int
    failed: int  # the judge erred: the battle waits for the next run


def pending(session: Session, limit: int = BATCH) -> list[tuple[str, str]]:
    """(battle id, prompt) of the oldest unsure battles no one has re-checked."""
    query = (
        select(Battle.id, Battle.prompt)
        .where(Battle.unsure.is_(True), Battle.recheck.is_(None))
        .order_by(Battle.created_at)
        .limit(limit)
    )
    return [(bid, prompt) for bid, prompt in session.execute(query)]


def record(session: Session, battle_id: str, geographic: bool, by: str) -> bool:
    """Store a re-check's answer (a later one replaces it); False when there is no such battle."""
    battle = session.get(Battle, battle_id)
    if battle is None:
        return False
    flags = [flag for flag in (battle.flags or []) if flag != NOT_GEOGRAPHIC]
    battle.flags = flags if geographic else [*flags, NOT_GEOGRAPHIC]
    battle.recheck, battle.rechecked_by = (GEOGRAPHIC if geographic else NOT_GEOGRAPHIC), by[:100]
    return True


async def recheck_unsure(sessions: sessionmaker[Session], judge: Judge, limit: int = BATCH) -> RecheckTally:
    """Ask `judge` about the unsure prompts not yet re-checked, and store each answer."""
    with sessions() as session:
        waiting = pending(session, limit)
    slots = asyncio.Semaphore(CONCURRENT)

    async def ask(prompt: str) -> bool | None:
        async with slots:
            try:
                return (await judge.judge(prompt))[0]
            except Exception as exc:  # noqa: BLE001 - a judge's failure leaves the battle for the next run
                log.warning("re-check of an unsure prompt failed: %s", str(exc)[:120])
                return None

    answers = await asyncio.gather(*(ask(prompt) for _, prompt in waiting))
    with sessions() as session:
        for (battle_id, _), answer in zip(waiting, answers, strict=True):
            if answer is not None:
                record(session, battle_id, answer, judge.name)
        session.commit()
    return RecheckTally(
        asked=len(waiting),
        not_geographic=sum(a is False for a in answers),
        failed=sum(a is None for a in answers),
    )


def recheck_with_configured_judge(sessions: sessionmaker[Session], settings: Any) -> RecheckTally | None:
    """`recheck_unsure` with the LLM judge `[gatekeeper]` names (None when it names none)."""
    from arena.gatekeeper.gatekeeper import build_judge

    pool_config = settings.pool
    section = pool_config.gatekeeper.given()
    if not ("contender" in section or "provider" in section) or section.get("mode") in ("offline", "off"):
        return None

    async def run() -> RecheckTally:
        import httpx

        from arena.contenders.deps import ProviderDeps
        from arena.images.store import store_for

        async with httpx.AsyncClient() as http:
            judge = build_judge(pool_config, ProviderDeps(http=http, images=store_for(settings), pool=pool_config))
            return await recheck_unsure(sessions, judge)

    return asyncio.run(run())


def unsure_battles(session: Session) -> Sequence[Any]:
    """Every unsure battle: id, when, its re-check and by whom, its prompt (`arena unsure list`)."""
    query = select(Battle.id, Battle.created_at, Battle.recheck, Battle.rechecked_by, Battle.prompt).where(
        Battle.unsure.is_(True)
    )
    return session.execute(query.order_by(Battle.created_at)).all()


def count_unsure(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(Battle).where(Battle.unsure.is_(True))) or 0)
