"""Runs contenders on benchmark instances and grades what they answered.

`run_suite` asks every (instance, contender) pair that has no finished run
of the same instance yet, at most `concurrency` at a time, and stores each
run as it ends: an interrupted benchmark resumes where it stopped, and a
pair that failed is tried again on the next run. `grade_suite` then grades
every finished run the grader has not graded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from arena.bench import repository
from arena.bench.dataset import DEFAULT_LIMITS, Instance
from arena.bench.grades import Grader, Run
from arena.contenders.base import Contender, ContenderError, ContenderImage, TextDelta, ToolStep, Usage
from arena.images.intake import IntakeLimits
from arena.images.store import ImageStore

log = logging.getLogger(__name__)

Progress = Callable[[int], None]  # called with the number of pairs just finished


@dataclass
class RunCounts:
    """What one `run_suite` did."""

    asked: int = 0
    skipped: int = 0  # finished earlier, same instance
    failed: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class GradeCounts:
    graded: int = 0
    ungraded: int = 0  # the judge failed on these; a rerun tries them again
    errors: list[str] = field(default_factory=list)


def pending_pairs(
    instances: Sequence[Instance], contenders: Sequence[str], finished: Mapping[tuple[str, str], str]
) -> list[tuple[Instance, str]]:
    """The pairs without a finished run of this very instance (an edited row runs again)."""
    return [(i, name) for i in instances for name in contenders if finished.get((i.key, name)) != i.fingerprint]


async def run_suite(
    instances: Sequence[Instance],
    contenders: Mapping[str, Contender],
    sessions: sessionmaker[Session],
    *,
    suite: str,
    concurrency: int = 4,
    timeouts: Mapping[str, float] | None = None,
    limits: IntakeLimits = DEFAULT_LIMITS,
    images: ImageStore | None = None,
    on_total: Callable[[int], None] | None = None,
    progress: Progress | None = None,
) -> RunCounts:
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    with sessions() as session:
        finished = repository.finished_fingerprints(session, suite)
    work = pending_pairs(instances, list(contenders), finished)
    counts = RunCounts(skipped=len(instances) * len(contenders) - len(work))
    if on_total is not None:
        on_total(len(work))
    photos = _Photos(limits, images)
    gate = asyncio.Semaphore(concurrency)

    async def one(instance: Instance, name: str) -> None:
        async with gate:
            image = await photos.get(instance)
            outcome = await ask(contenders[name], instance.prompt, image, (timeouts or {}).get(name, 180.0))
            await asyncio.to_thread(_store, sessions, suite, instance, name, contenders[name], outcome)
        counts.asked += 1
        if outcome.error is not None:
            counts.failed += 1
            counts.errors.append(f"{instance.key} × {name}: {outcome.error}")
        if progress is not None:
            progress(1)

    await asyncio.gather(*(one(instance, name) for instance, name in work))
    return counts


@dataclass
class Outcome:
    """One contender's answer to one instance, as it ended."""

    answer: str = ""
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    latency_ms: int = 0
    error: str | None = None

    @property
    def turns(self) -> int:
        # GATE attaches a turn's thought to its first tool call: each such
        # step opened a tool-calling turn; the answering turn is the last.
        return 1 + sum(1 for step in self.trajectory if str(step.get("thought") or "").strip())


async def ask(contender: Contender, prompt: str, image: ContenderImage, timeout: float) -> Outcome:
    """Run one contender to the end (or its timeout), keeping what it said."""
    outcome = Outcome()
    parts: list[str] = []
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            async with aclosing(contender.stream(prompt, image)) as events:  # type: ignore[type-var]
                async for event in events:
                    if isinstance(event, TextDelta):
                        parts.append(event.text)
                    elif isinstance(event, ToolStep):
                        step = asdict(event)
                        step["image_refs"] = list(event.image_refs)
                        outcome.trajectory.append(step)
                    elif isinstance(event, Usage):
                        outcome.usage = event
    except ContenderError as exc:
        outcome.error = exc.message
    except TimeoutError:
        outcome.error = f"no answer within {timeout:g} s"
    except Exception as exc:  # a contender's bug is one failed run, not a failed benchmark
        log.exception("contender %s crashed on a benchmark instance", contender.name)
        outcome.error = f"the contender failed with an internal error ({type(exc).__name__})"
    outcome.answer = "".join(parts)
    outcome.latency_ms = int((time.monotonic() - started) * 1000)
    if outcome.error is None and not outcome.answer.strip():
        outcome.error = "the contender returned an empty answer"
    return outcome


async def grade_suite(
    instances: Sequence[Instance],
    contenders: Sequence[str],
    sessions: sessionmaker[Session],
    grader: Grader,
    *,
    suite: str,
    concurrency: int = 4,
    on_total: Callable[[int], None] | None = None,
    progress: Progress | None = None,
) -> GradeCounts:
    by_key = {i.key: i for i in instances}
    with sessions() as session:
        todo = [r for r in repository.ungraded(session, suite, grader.name, contenders) if r.instance_key in by_key]
    if on_total is not None:
        on_total(len(todo))
    counts = GradeCounts()
    gate = asyncio.Semaphore(concurrency)

    async def one(run: repository.StoredRun) -> None:
        async with gate:
            try:
                grade = await grader.grade(by_key[run.instance_key], Run(run.answer, tuple(run.trajectory)))
            except ContenderError as exc:
                counts.ungraded += 1
                counts.errors.append(f"{run.instance_key} × {run.contender}: {exc.message}")
            else:
                await asyncio.to_thread(_store_grade, sessions, run.id, grader.name, grade)
                counts.graded += 1
        if progress is not None:
            progress(1)

    await asyncio.gather(*(one(run) for run in todo))
    return counts


class _Photos:
    """Each instance's photo prepared once, however many contenders ask; kept
    in the image store (when given) like a battle's, so a trajectory's
    reference to the photo (img_0) resolves."""

    def __init__(self, limits: IntakeLimits, images: ImageStore | None) -> None:
        self.limits = limits
        self.images = images
        self.cache: dict[str, asyncio.Future[ContenderImage]] = {}

    async def get(self, instance: Instance) -> ContenderImage:
        if instance.key not in self.cache:
            self.cache[instance.key] = asyncio.ensure_future(asyncio.to_thread(self._prepare, instance))
        return await self.cache[instance.key]

    def _prepare(self, instance: Instance) -> ContenderImage:
        image = instance.contender_image(self.limits)
        if self.images is not None:
            self.images.put(image.jpeg)
        return image


def _store(
    sessions: sessionmaker[Session], suite: str, instance: Instance, name: str, contender: Contender, outcome: Outcome
) -> None:
    with sessions.begin() as session:
        repository.save_run(
            session,
            suite=suite,
            instance_key=instance.key,
            instance_hash=instance.fingerprint,
            level=instance.level,
            language=instance.language,
            contender=name,
            gate=bool(contender.gate),
            status="error" if outcome.error is not None else "done",
            answer=outcome.answer,
            error=outcome.error,
            trajectory=outcome.trajectory,
            tool_calls=len(outcome.trajectory),
            turns=outcome.turns,
            latency_ms=outcome.latency_ms,
            input_tokens=outcome.usage.input_tokens,
            output_tokens=outcome.usage.output_tokens,
        )


def _store_grade(sessions: sessionmaker[Session], result_id: int, grader: str, grade: Any) -> None:
    with sessions.begin() as session:
        repository.save_grade(session, result_id, grader, grade)
