"""One battle in flight (`BattleRun`): both contenders answer concurrently, their
events are fanned out to every stream that watches, and each side is persisted the
moment it finishes. When the last watcher disconnects, the upstream calls are
cancelled and the battle is marked abandoned. `runner.BattleRuns` starts the runs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from arena.answers.markdown import parse_markdown, render_markdown
from arena.answers.style import style_features
from arena.battles import repository
from arena.battles.events import (
    DELTA_GATHER,
    KEEP_ALIVE,
    KEEP_ALIVE_INTERVAL,
    BattleEvent,
)
from arena.battles.relay import KEEP_EVENTS, prune_events
from arena.contenders.base import (
    ContenderError,
    ContenderImage,
    TextDelta,
    ToolStep,
    Usage,
)
from arena.db.tables import utcnow
from arena.db.text import storable, storable_json
from arena.geo.commitment import answer_commitment

if TYPE_CHECKING:  # runner.py starts the runs and imports this module
    from arena.battles.runner import BattleRuns

log = logging.getLogger(__name__)

FLUSH_INTERVAL = 0.05  # seconds: deltas are coalesced into at most 20 events a second per side


@dataclass
class _Side:
    side: str
    contender: str
    text: list[str] = field(default_factory=list)
    length: int = 0
    pending: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    status: str = "pending"
    error: str | None = None
    style: dict[str, Any] | None = None
    started: float = 0.0
    first_text: float | None = None  # seconds from the request to the first text
    latency_ms: int | None = None
    last_flush: float = 0.0
    timer: asyncio.TimerHandle | None = None


class BattleRun:
    """One battle in flight: two pumps, a history, and the watchers' queues."""

    def __init__(
        self, runs: BattleRuns, battle_id: str, prompt: str, image: ContenderImage, sides: dict[str, str]
    ) -> None:
        self.runs = runs
        self.battle_id = battle_id
        self.prompt = prompt
        self.image = image
        self.sides = {side: _Side(side, name) for side, name in sides.items()}
        self.history: list[BattleEvent] = []
        self.watchers: set[asyncio.Queue[BattleEvent]] = set()
        self.watched = False  # a watcher has followed it
        self.shared = False  # its events go to the outbox: a watcher elsewhere asked for them
        self.finished = False
        self.task: asyncio.Task[None]

    async def follow(self) -> AsyncIterator[str]:
        queue: asyncio.Queue[BattleEvent] = asyncio.Queue()
        for event in self.history:
            queue.put_nowait(event)
        self.watchers.add(queue)
        self.watched = True
        started: set[str] = set()  # the sides whose first delta this watcher was sent
        try:
            while True:
                events: list[BattleEvent] = []
                if queue.empty():
                    try:
                        # a timer; `wait_for` (3.11) made a task for every event
                        async with asyncio.timeout(KEEP_ALIVE_INTERVAL):
                            events.append(await queue.get())
                    except TimeoutError:
                        yield KEEP_ALIVE
                        continue
                # the events waiting go out as one message: a replica behind on its writes
                # catches up in one send a watcher, not one per delta
                events += [queue.get_nowait() for _ in range(queue.qsize())]
                if all(event.name == "delta" and event.data["side"] in started for event in events):
                    # a later delta waits a moment for the other side's and the model's next
                    await asyncio.sleep(DELTA_GATHER)
                    events += [queue.get_nowait() for _ in range(queue.qsize())]
                started.update(event.data["side"] for event in events if event.name == "delta")
                yield "".join(event.encode() for event in events)
                if any(event.name == "end" for event in events):
                    return
        finally:
            self.watchers.discard(queue)
            if not self.watchers and not self.finished:
                # Nobody is watching: stop paying for the answers, unless the
                # browser reconnects (EventSource does by itself) within the grace.
                asyncio.get_running_loop().call_later(self.runs.abandon_grace, self._cancel_if_unwatched)

    def share_events(self) -> None:
        """From now on, write the battle's events for watchers on other replicas: the ones
        published so far first, so they miss none."""
        outbox = self.runs.outbox
        if self.shared or outbox is None:
            return
        self.shared = True
        for seq, event in enumerate(self.history, 1):
            outbox.add(self.battle_id, seq, event)

    def cancel_if_never_watched(self) -> None:
        if not self.watched and not self.finished:
            self.task.cancel()

    def _cancel_if_unwatched(self) -> None:
        if not self.watchers and not self.finished:
            self.task.cancel()

    async def run(self) -> None:
        try:
            await self._run()
        finally:
            if self.runs.outbox is not None and self.shared:
                # the last events (`end` above all) must reach the other replicas, even when cancelled
                await self.runs.outbox.flush(self.battle_id)

    async def _run(self) -> None:
        try:
            async with asyncio.timeout(self.runs.battle_timeout):
                await asyncio.gather(*(self._guard(s, self._pump(s)) for s in self.sides.values()))
        except TimeoutError:
            for side in self.sides.values():
                if side.status in ("pending", "streaming"):
                    message = f"No complete answer within {self.runs.battle_timeout:.0f} s."
                    await self._guard(side, self._fail(side, message, provider_down=True))
        except asyncio.CancelledError:
            self._abandon()
            self._ended("abandoned")
            # a watcher may still be here (shutdown, or one that joined as the
            # last one left): `end` is always the last event it gets
            self._publish(BattleEvent("end", {"status": "abandoned"}))
            raise
        status = "ready" if all(s.status == "done" for s in self.sides.values()) else "failed"
        try:
            flags = await asyncio.to_thread(self._flags) if status == "ready" else []
            await self.runs.write(self._persist_battle, status, flags)
        except Exception:
            # the battle stays `running` in the database until it is found stale
            log.exception("battle %s: could not store its outcome", self.battle_id)
            status = "failed"
        self.finished = True
        self._ended(status)
        if status == "ready":
            self._publish(BattleEvent("ready", {}))
        self._publish(BattleEvent("end", {"status": status}))

    async def _guard(self, side: _Side, step: Awaitable[None]) -> None:
        """Run one side's step; a fault of ours (the database, a hook) fails
        that side instead of escaping `gather` and leaving the run hanging."""
        try:
            await step
        except Exception:
            log.exception("battle %s: side %s failed in the arena itself", self.battle_id, side.side)
            side.status = "error"
            side.error = "The arena could not store this answer."
            self._publish(BattleEvent("error", {"side": side.side, "message": side.error}))

    async def _pump(self, side: _Side) -> None:
        contender = self.runs.pool.get(side.contender)
        side.started = time.monotonic()
        side.status = "streaming"  # in the database since the claim
        if contender is None:
            await self._fail(side, f"Contender {side.contender!r} is no longer in the pool.")
            return
        limit = self.runs.max_answer_chars
        try:
            async for event in contender.stream(self.prompt, self.image):
                if isinstance(event, TextDelta):
                    self._add_text(side, event.text)
                    if side.length > limit:
                        await self._fail(
                            side, f"The answer grew past the arena's limit of {limit:,} characters, so it was stopped."
                        )
                        return  # leaving the loop closes the contender's stream
                elif isinstance(event, ToolStep):
                    self._flush(side)
                    step = storable_json(asdict(event))
                    step["image_refs"] = list(event.image_refs)
                    side.steps.append(step)
                    self._publish(BattleEvent("step", {"side": side.side, **step}))
                elif isinstance(event, Usage):
                    side.usage = event
        except ContenderError as exc:
            # only a provider that is down counts toward its cool-down: an answer refused for its
            # content (a 400 from a filter) says nothing about the others' battles
            await self._fail(side, storable(exc.message), provider_down=exc.retryable)
            return
        except Exception:
            log.exception("contender %s crashed in battle %s", side.contender, self.battle_id)
            await self._fail(side, "The contender failed with an internal error.")
            return
        self._flush(side)
        answer = "".join(side.text)
        if not answer.strip():
            await self._fail(side, "The contender returned an empty answer.")
            return
        side.status = "done"
        side.latency_ms = int((time.monotonic() - side.started) * 1000)
        # markdown and style counts of a long answer are CPU work: off the event loop
        counts, html = await asyncio.to_thread(_style_and_html, answer)
        side.style = {**counts, "tool_calls": len(side.steps)}  # the style fit's tool-use feature
        await self.runs.write(self._persist_side, side)
        await self._report(side, ok=True)
        if self.runs.hooks.on_side_timing is not None:
            self.runs.hooks.on_side_timing(side.contender, side.first_text, side.latency_ms / 1000)
        self._publish(BattleEvent("done", {"side": side.side, "html": html, "latency_ms": side.latency_ms}))

    def _add_text(self, side: _Side, text: str) -> None:
        text = storable(text)  # a lone surrogate or NUL from a model no longer fails the battle
        if side.first_text is None and text:
            side.first_text = time.monotonic() - side.started
        side.length += len(text)
        side.text.append(text)
        side.pending.append(text)
        if time.monotonic() - side.last_flush >= FLUSH_INTERVAL:
            self._flush(side)
        elif side.timer is None:
            side.timer = asyncio.get_running_loop().call_later(FLUSH_INTERVAL, self._flush, side)

    def _flush(self, side: _Side) -> None:
        if side.timer is not None:
            side.timer.cancel()
            side.timer = None
        if not side.pending:
            return
        delta = "".join(side.pending)
        side.pending.clear()
        side.last_flush = time.monotonic()
        # the new text only: the page renders it as plain text until `done` brings the HTML
        # (re-rendering all of it on every delta was quadratic and ran on the event loop)
        self._publish(BattleEvent("delta", {"side": side.side, "text": delta}))

    async def _fail(self, side: _Side, message: str, provider_down: bool = False) -> None:
        self._flush(side)
        side.status = "error"
        side.error = message
        side.latency_ms = int((time.monotonic() - side.started) * 1000)
        log.warning("battle %s: contender %s failed: %s", self.battle_id, side.contender, message)
        await self.runs.write(self._persist_side, side)
        if provider_down:
            await self._report(side, ok=False)
        self._publish(BattleEvent("error", {"side": side.side, "message": message}))

    def _publish(self, event: BattleEvent) -> None:
        self.history.append(event)
        for queue in self.watchers:
            queue.put_nowait(event)
        outbox = self.runs.outbox
        if self.shared and outbox is not None:
            outbox.add(self.battle_id, len(self.history), event)

    def _ended(self, status: str) -> None:
        if self.runs.hooks.on_battle_end is not None:
            for side in self.sides.values():
                self.runs.hooks.on_battle_end(side.contender, status)

    async def _report(self, side: _Side, ok: bool) -> None:
        if self.runs.hooks.on_side_result is not None:
            # the cool-down book may be the database: off the event loop, and a write shutdown waits for
            await self.runs.write(self.runs.hooks.on_side_result, side.contender, ok)

    def _flags(self) -> list[str]:
        if self.runs.hooks.flag_battle is None:
            return []
        # Answers and the agent's own words; not tool observations, since a
        # web page naming a model maker says nothing about who is answering.
        texts = ["".join(s.text) for s in self.sides.values()]
        texts += [
            f"{st.get('thought', '')} {json.dumps(st.get('args', {}), ensure_ascii=False)}"
            for s in self.sides.values()
            for st in s.steps
        ]
        return self.runs.hooks.flag_battle(texts)

    # -- persistence (runs in a worker thread; the session is short-lived) --

    def _persist_side(self, side: _Side) -> None:
        values: dict[str, Any] = {
            "status": side.status,
            "text": "".join(side.text),
            "error": side.error,
            "latency_ms": side.latency_ms,
            "input_tokens": side.usage.input_tokens,
            "output_tokens": side.usage.output_tokens,
            "trajectory": side.steps,
            "style": side.style,
            "finished_at": utcnow(),
        }
        if side.status == "done":  # where the answer commits to, for accuracy on labelled battles
            found = answer_commitment(values["text"])
            values["commitment"] = found.as_json() if found else None
        with self.runs.sessions.begin() as session:
            repository.update_response(session, self.battle_id, side.side, **values)

    def _persist_battle(self, status: str, flags: list[str]) -> None:
        with self.runs.sessions.begin() as session:
            repository.finish_battle(session, self.battle_id, status, flags)
            if self.runs.relay is not None:  # events of battles long over: a replay has them
                prune_events(session, max(KEEP_EVENTS, timedelta(seconds=4 * self.runs.battle_timeout)))

    def _abandon(self) -> None:
        # Synchronous on purpose: this runs while the task is being cancelled.
        self.finished = True
        with self.runs.sessions.begin() as session:
            for side in self.sides.values():
                if side.status in ("pending", "streaming"):
                    side.status = "abandoned"
                    repository.update_response(
                        session,
                        self.battle_id,
                        side.side,
                        status="abandoned",
                        text="".join(side.text),
                        trajectory=side.steps,
                        finished_at=utcnow(),
                    )
            repository.finish_battle(session, self.battle_id, "abandoned", [])
        log.info("battle %s abandoned: its last watcher disconnected", self.battle_id)


def _style_and_html(answer: str) -> tuple[dict[str, Any], str]:
    tokens = parse_markdown(answer)  # one parse for both
    return style_features(answer, tokens), render_markdown(answer, tokens)
