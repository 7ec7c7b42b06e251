"""Following a battle this process is not running: its run is on another replica (or
another worker), or it is over.

On PostgreSQL the watcher announces itself, the running replica then writes the battle's
events, and each is read when NOTIFY rings the battle's doorbell (`arena.battles.relay`),
so the watcher sees each delta as it happens. On SQLite (one process) a watcher that finds
no run here waits for the battle to finish and replays it from the database. Either way a
battle whose replica died (its lease ran out) is marked abandoned by the watcher that finds
it so.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Protocol

from sqlalchemy.orm import Session, sessionmaker

from arena.answers.markdown import render_markdown
from arena.battles import repository
from arena.battles.events import KEEP_ALIVE, KEEP_ALIVE_INTERVAL, RECONNECT, BattleEvent
from arena.battles.relay import EventRelay, announce_watcher, read_events
from arena.db.tables import Battle

POLL_INTERVAL = 1.0


class Runs(Protocol):
    """What following reads of the process's runs (`runner.BattleRuns`), as they are now."""

    lease: float  # a run not renewed for this long lost its replica
    draining: bool  # the process is shutting down: its watchers go elsewhere


class Following:
    """The streams of this process that follow battles running elsewhere."""

    def __init__(self, sessions: sessionmaker[Session], relay: EventRelay | None, runs: Runs) -> None:
        self.sessions = sessions
        self.relay = relay
        self.runs = runs

    def follow(self, battle_id: str) -> AsyncIterator[str]:
        """SSE text of the battle as it runs elsewhere, to its end."""
        return self._relayed(battle_id) if self.relay is not None else self._poll(battle_id)

    async def _poll(self, battle_id: str) -> AsyncIterator[str]:
        """For a battle running on another replica (or finished): wait, then replay."""
        waited = 0.0
        while True:
            battle = await asyncio.to_thread(self._load, battle_id)
            if battle is None:
                return
            if battle.status in repository.FINISHED:
                # markdown of a long answer takes a while: rendered off the event loop
                for chunk in await asyncio.to_thread(replay_encoded, battle):
                    yield chunk
                return
            stale_after = timedelta(seconds=self.runs.lease)
            if await asyncio.to_thread(self._abandon_if_stale, battle_id, stale_after):
                continue
            if self.runs.draining:  # followed elsewhere from now on
                yield RECONNECT
                return
            await asyncio.sleep(POLL_INTERVAL)
            waited += POLL_INTERVAL
            if waited >= KEEP_ALIVE_INTERVAL:
                waited = 0.0
                yield KEEP_ALIVE

    async def _relayed(self, battle_id: str) -> AsyncIterator[str]:
        """For a battle running on another replica: its events as that replica writes them,
        each read when NOTIFY says there are new ones."""
        assert self.relay is not None
        sent = 0  # seq of the last event this watcher has
        seen_finished = False
        look_now = True  # a battle that already ended (or never started) is replayed at once
        with self.relay.doorbell(battle_id) as bell:
            # after the doorbell is hung: the runner's first rows ring it
            await asyncio.to_thread(self._announce_watcher, battle_id)
            while True:
                if self.runs.draining:  # followed elsewhere from now on (seen within lease / 3)
                    yield RECONNECT
                    return
                bell.clear()  # before reading: a ring during the read is not lost
                events = await asyncio.to_thread(self._read_events, battle_id, sent)
                for seq, event in events:
                    sent = seq
                    yield event.encode()
                    if event.name == "end":
                        return
                if events:
                    look_now = False
                    continue
                # The doorbell rings for new rows; only a quiet while makes us ask why.
                listening = self.relay.listening.is_set()
                try:
                    if not look_now:
                        await asyncio.wait_for(bell.wait(), self.runs.lease / 3 if listening else POLL_INTERVAL)
                        # a ring before any event, with none to read: the battle ended unwatched
                        look_now = sent == 0
                        continue
                except TimeoutError:
                    if sent == 0:  # the runner may have missed the announcement (its LISTEN was down)
                        await asyncio.to_thread(self._announce_watcher, battle_id)
                look_now = False
                battle = await asyncio.to_thread(self._load, battle_id)
                if battle is None:
                    return
                stale = battle.status == "running" and await asyncio.to_thread(
                    self._abandon_if_stale, battle_id, timedelta(seconds=self.runs.lease)
                )
                if battle.status in repository.FINISHED or stale:
                    if sent == 0:  # nothing sent yet (or its rows are pruned): the stored replay is whole
                        async for chunk in self._poll(battle_id):
                            yield chunk
                        return
                    if stale or seen_finished:
                        # finished a while ago, or its replica died, without an `end` row: say how it ended
                        status = "abandoned" if stale else battle.status
                        if status in ("ready", "voted"):
                            yield BattleEvent("ready", {}).encode()
                        yield BattleEvent("end", {"status": status}).encode()
                        return
                    seen_finished = True  # its `end` row may be a moment behind the status
                yield KEEP_ALIVE

    def _announce_watcher(self, battle_id: str) -> None:
        with self.sessions.begin() as session:
            announce_watcher(session, battle_id)

    def _read_events(self, battle_id: str, after: int) -> list[tuple[int, BattleEvent]]:
        with self.sessions() as session:
            return read_events(session, battle_id, after)

    def _load(self, battle_id: str) -> Battle | None:
        with self.sessions() as session:
            return repository.get_battle(session, battle_id, with_responses=True)

    def _abandon_if_stale(self, battle_id: str, older_than: timedelta) -> bool:
        with self.sessions.begin() as session:
            return repository.abandon_if_stale(session, battle_id, older_than)


def replay_encoded(battle: Battle) -> list[str]:
    return [event.encode() for event in replay(battle)]


def replay(battle: Battle) -> list[BattleEvent]:
    """The events of a finished battle, rebuilt from the database."""
    events: list[BattleEvent] = []
    for response in battle.responses:
        for step in response.trajectory or []:
            events.append(BattleEvent("step", {"side": response.side, **step}))
        if response.text:
            events.append(BattleEvent("delta", {"side": response.side, "text": response.text}))
        if response.status == "done":
            html = render_markdown(response.text) if response.text else ""
            events.append(BattleEvent("done", {"side": response.side, "html": html, "latency_ms": response.latency_ms}))
        elif response.status == "error":
            events.append(BattleEvent("error", {"side": response.side, "message": response.error or ""}))
    if battle.status in ("ready", "voted"):
        events.append(BattleEvent("ready", {}))
    events.append(BattleEvent("end", {"status": battle.status}))
    return events
