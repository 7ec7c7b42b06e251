"""Every query of the benchmark: runs and grades in `bench_results` and
`bench_grades`. Callers own the transaction."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from arena.bench.grades import Grade
from arena.db.tables import BenchGrade, BenchResult


@dataclass(frozen=True)
class StoredRun:
    """A finished run as the graders and the report read it."""

    id: int
    suite: str
    instance_key: str
    level: int
    language: str
    contender: str
    gate: bool
    status: str
    answer: str
    trajectory: list[dict[str, Any]]
    tool_calls: int
    turns: int
    latency_ms: int | None
    input_tokens: int | None
    output_tokens: int | None


def finished_fingerprints(session: Session, suite: str) -> dict[tuple[str, str], str]:
    """(instance key, contender) -> fingerprint of every run that finished."""
    rows = session.execute(
        select(BenchResult.instance_key, BenchResult.contender, BenchResult.instance_hash).where(
            BenchResult.suite == suite, BenchResult.status == "done"
        )
    )
    return {(key, contender): fingerprint for key, contender, fingerprint in rows}


def save_run(session: Session, **fields: Any) -> int:
    """Store a run, replacing an earlier one of the same pair (and its grades:
    they graded another answer)."""
    session.execute(
        delete(BenchResult).where(
            BenchResult.suite == fields["suite"],
            BenchResult.instance_key == fields["instance_key"],
            BenchResult.contender == fields["contender"],
        )
    )
    row = BenchResult(**fields)
    session.add(row)
    session.flush()
    return row.id


def runs(session: Session, suite: str | None = None, contenders: Iterable[str] | None = None) -> list[StoredRun]:
    query = select(BenchResult).order_by(BenchResult.id)
    if suite is not None:
        query = query.where(BenchResult.suite == suite)
    if contenders is not None:
        query = query.where(BenchResult.contender.in_(list(contenders)))
    return [_stored(r) for r in session.scalars(query)]


def ungraded(session: Session, suite: str, grader: str, contenders: Iterable[str]) -> list[StoredRun]:
    graded = select(BenchGrade.result_id).where(BenchGrade.grader == grader)
    query = (
        select(BenchResult)
        .where(
            BenchResult.suite == suite,
            BenchResult.status == "done",
            BenchResult.contender.in_(list(contenders)),
            BenchResult.id.not_in(graded),
        )
        .order_by(BenchResult.id)
    )
    return [_stored(r) for r in session.scalars(query)]


def save_grade(session: Session, result_id: int, grader: str, grade: Grade) -> None:
    session.execute(delete(BenchGrade).where(BenchGrade.result_id == result_id, BenchGrade.grader == grader))
    session.add(
        BenchGrade(
            result_id=result_id,
            grader=grader,
            correct=grade.correct,
            extracted_answer=grade.extracted_answer,
            reasoning=grade.reasoning,
            confidence=grade.confidence,
            milestones=list(grade.milestones) if grade.milestones is not None else None,
        )
    )


def grades(session: Session, suite: str | None = None) -> dict[tuple[int, str], BenchGrade]:
    """(result id, grader) -> grade."""
    query = select(BenchGrade).join(BenchResult, BenchResult.id == BenchGrade.result_id)
    if suite is not None:
        query = query.where(BenchResult.suite == suite)
    return {(g.result_id, g.grader): g for g in session.scalars(query)}


def suites_and_graders(session: Session) -> list[tuple[str, str]]:
    """Every (suite, grader) that has grades, for the API and the page."""
    rows = session.execute(
        select(BenchResult.suite, BenchGrade.grader)
        .join(BenchGrade, BenchGrade.result_id == BenchResult.id)
        .distinct()
        .order_by(BenchResult.suite, BenchGrade.grader)
    )
    return [(suite, grader) for suite, grader in rows]


def _stored(row: BenchResult) -> StoredRun:
    return StoredRun(
        id=row.id,
        suite=row.suite,
        instance_key=row.instance_key,
        level=row.level,
        language=row.language,
        contender=row.contender,
        gate=row.gate,
        status=row.status,
        answer=row.answer,
        trajectory=list(row.trajectory or []),
        tool_calls=row.tool_calls,
        turns=row.turns,
        latency_ms=row.latency_ms,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
    )
