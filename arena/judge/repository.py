"""Queries of the model judge: voted battles to judge, and its stored verdicts."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, selectinload

from arena.db.tables import Battle, Image, JudgeVerdict, Vote
from arena.images.store import ImageStore
from arena.judge.verdict import BattleCase, Verdict


def cases_to_judge(session: Session, judge: str, images: ImageStore, limit: int | None = None) -> list[BattleCase]:
    """Voted battles with both answers, not yet judged by `judge`, oldest vote first."""
    judged = select(JudgeVerdict.battle_id).where(JudgeVerdict.judge == judge)
    query = (
        select(Battle, Image)
        .join(Vote, Vote.battle_id == Battle.id)
        .join(Image, Image.sha256 == Battle.image_sha256)
        .where(Battle.id.not_in(judged))
        .options(selectinload(Battle.responses))
        .order_by(Vote.id)
    )
    cases = []
    for battle, image in session.execute(query):
        answers = {r.side: r for r in battle.responses}
        if any(answers.get(side) is None or answers[side].status != "done" for side in ("a", "b")):
            continue
        if not images.exists(battle.image_sha256):
            continue  # the photo is on another replica's disk: judge it there
        cases.append(
            BattleCase(
                battle.id,
                battle.prompt,
                battle.image_sha256,
                image.width,
                image.height,
                answers["a"].text,
                answers["b"].text,
            )
        )
        if limit is not None and len(cases) >= limit:
            break
    return cases


def save_verdict(session: Session, battle_id: str, judge: str, verdict: Verdict) -> None:
    session.execute(delete(JudgeVerdict).where(JudgeVerdict.battle_id == battle_id, JudgeVerdict.judge == judge))
    session.add(
        JudgeVerdict(
            battle_id=battle_id,
            judge=judge,
            choice_ab=verdict.choice_ab,
            choice_ba=verdict.choice_ba,
            choice=verdict.choice,
            consistent=verdict.consistent,
            reasoning=verdict.reasoning,
        )
    )


@dataclass(frozen=True)
class JudgedBattle:
    battle_id: str
    model_a: str
    model_b: str
    human: str
    judge: str
    consistent: bool


def judged_battles(session: Session, judge: str) -> list[JudgedBattle]:
    rows = session.execute(
        select(Battle.id, Battle.model_a, Battle.model_b, Vote.choice, JudgeVerdict.choice, JudgeVerdict.consistent)
        .join(Vote, Vote.battle_id == Battle.id)
        .join(JudgeVerdict, JudgeVerdict.battle_id == Battle.id)
        .where(JudgeVerdict.judge == judge)
        .order_by(Vote.id)
    )
    return [JudgedBattle(*row) for row in rows]


def judges(session: Session) -> list[str]:
    return list(session.scalars(select(JudgeVerdict.judge).distinct().order_by(JudgeVerdict.judge)))
