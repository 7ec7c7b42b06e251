"""Judging every voted battle not judged yet, a few at a time; each verdict
is stored as it arrives, so an interrupted run resumes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from arena.contenders.base import ContenderError, ContenderImage
from arena.images.store import ImageStore
from arena.judge import repository
from arena.judge.verdict import BattleCase, BattleJudge, Verdict


@dataclass
class JudgeCounts:
    judged: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


async def judge_battles(
    judge: BattleJudge,
    sessions: sessionmaker[Session],
    images: ImageStore,
    *,
    concurrency: int = 4,
    limit: int | None = None,
) -> JudgeCounts:
    with sessions() as session:
        cases = await asyncio.to_thread(repository.cases_to_judge, session, judge.name, images, limit)
    counts = JudgeCounts()
    gate = asyncio.Semaphore(concurrency)

    async def one(case: BattleCase) -> None:
        async with gate:
            photo = await asyncio.to_thread(images.get, case.image_sha256)
            image = ContenderImage(jpeg=photo, width=case.width, height=case.height, sha256=case.image_sha256)
            try:
                verdict = await judge.judge(case, image)
            except ContenderError as exc:
                counts.failed += 1
                counts.errors.append(f"battle {case.battle_id}: {exc.message}")
                return
            await asyncio.to_thread(_store, sessions, case.battle_id, judge.name, verdict)
            counts.judged += 1

    await asyncio.gather(*(one(case) for case in cases))
    return counts


def _store(sessions: sessionmaker[Session], battle_id: str, judge: str, verdict: Verdict) -> None:
    with sessions.begin() as session:
        repository.save_verdict(session, battle_id, judge, verdict)
