"""Battle events across replicas on PostgreSQL: LISTEN/NOTIFY as the doorbell,
rows as the letters.

A replica writes a battle's events only once a watcher elsewhere asks for
them: that watcher sends `NOTIFY arena_battle_watch, '<battle id>'`, and the
replica running the battle then writes every event it has published so far
and each one after to `battle_events`, in small batches (one writer for all
the replica's battles, `EventOutbox`), and in the same transaction
`NOTIFY arena_battle_events, '<battle id>'` (PostgreSQL delivers it at commit,
so the rows are there when it arrives; the payload is a pointer because a
notification carries at most 8000 bytes and one delta may not). Each replica
holds one LISTEN connection for both channels; a watcher of a battle running
elsewhere waits on its doorbell and reads the rows after the last one it sent.
SQLite has no NOTIFY and runs as one process: there the runner's in-memory
fan-out is the whole story.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import cast

import psycopg
from sqlalchemy import Table, delete, insert, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from arena.battles.events import BattleEvent
from arena.db.tables import BattleEventRow, utcnow

log = logging.getLogger(__name__)
EVENTS = cast(Table, BattleEventRow.__table__)  # Core: rows, not objects

CHANNEL = "arena_battle_events"
WATCH_CHANNEL = "arena_battle_watch"  # "someone elsewhere watches this battle: write its events"
APPLICATION_NAME = "arena-event-relay"  # how its connections show in pg_stat_activity
RECONNECT_DELAY = 1.0  # seconds between attempts to get the LISTEN connection back
# rows older than this are pruned; longer than any battle may run (the runner passes its timeout)
KEEP_EVENTS = timedelta(minutes=10)


def announce_watcher(session: Session, battle_id: str) -> None:
    """Ask the replica running the battle to write its events (delivered at commit)."""
    session.execute(text("SELECT pg_notify(:channel, :battle_id)"), {"channel": WATCH_CHANNEL, "battle_id": battle_id})


def write_event_batches(session: Session, batches: dict[str, list[tuple[int, BattleEvent]]]) -> None:
    """Store batches of events of many battles and ring each battle's doorbell (delivered at
    commit): one multi-row insert and one statement for the doorbells, whatever their number."""
    at = utcnow()
    rows = [
        {"battle_id": battle_id, "seq": seq, "name": e.name, "data": e.data, "created_at": at}
        for battle_id, events in batches.items()
        for seq, e in events
    ]
    if rows:  # a battle with none only has its doorbell rung (`EventOutbox.ring`)
        session.execute(insert(EVENTS), rows)
    session.execute(
        text("SELECT pg_notify(:channel, battle_id) FROM unnest(CAST(:ids AS text[])) AS battle_id"),
        {"channel": CHANNEL, "ids": list(batches)},
    )


class EventOutbox:
    """Every running battle's events for watchers on other replicas, written by one writer per
    replica: whatever is waiting goes in one transaction, while the next batch gathers. A
    writer per battle made a transaction per delta, 4,000 a second at 500 battles."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        self._waiting: dict[str, list[tuple[int, BattleEvent]]] = {}
        self._writing: dict[str, list[tuple[int, BattleEvent]]] = {}
        self._writer: asyncio.Task[None] | None = None

    def add(self, battle_id: str, seq: int, event: BattleEvent) -> None:
        self._waiting.setdefault(battle_id, []).append((seq, event))
        self._start_writer()

    def ring(self, battle_id: str) -> None:
        """Ring the battle's doorbell with the next batch, with no events of its own."""
        self._waiting.setdefault(battle_id, [])
        self._start_writer()

    def _start_writer(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_waiting(), name="battle-events")

    async def flush(self, battle_id: str) -> None:
        """Until the battle's events handed in so far are written (or their write failed)."""
        while battle_id in self._waiting or battle_id in self._writing:
            await asyncio.sleep(0.01)

    async def settle(self) -> None:
        """Until the writer is done with what is waiting: at shutdown, before the engine goes."""
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)

    async def _write_waiting(self) -> None:
        while self._waiting:
            self._writing, self._waiting = self._waiting, {}
            try:
                await asyncio.to_thread(self._write, self._writing)
            except Exception:  # a database outage: watchers elsewhere wait, then replay or time out
                count = sum(len(events) for events in self._writing.values())
                log.warning("could not write %d event(s) of %d battle(s)", count, len(self._writing), exc_info=True)
            finally:
                self._writing = {}

    def _write(self, batches: dict[str, list[tuple[int, BattleEvent]]]) -> None:
        with self.sessions.begin() as session:
            write_event_batches(session, batches)


def read_events(session: Session, battle_id: str, after: int) -> list[tuple[int, BattleEvent]]:
    """The battle's events after `after`, up to the first gap: two batches commit in any
    order, and a watcher must never skip one that is still on its way."""
    rows = session.execute(
        select(BattleEventRow.seq, BattleEventRow.name, BattleEventRow.data)
        .where(BattleEventRow.battle_id == battle_id, BattleEventRow.seq > after)
        .order_by(BattleEventRow.seq)
    )
    events: list[tuple[int, BattleEvent]] = []
    for seq, name, data in rows:
        if seq != after + len(events) + 1:
            break
        events.append((seq, BattleEvent(name, data)))
    return events


def prune_events(session: Session, older_than: timedelta) -> int:
    result = session.execute(delete(BattleEventRow).where(BattleEventRow.created_at < utcnow() - older_than))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


class EventRelay:
    """This replica's LISTEN connection and the watchers waiting on it."""

    def __init__(self, database_url: str) -> None:
        url = make_url(database_url)
        # psycopg's own connection string: the SQLAlchemy URL without its driver suffix
        self._dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self._doorbells: dict[str, set[asyncio.Event]] = defaultdict(set)
        self._task: asyncio.Task[None] | None = None
        self.listening = asyncio.Event()  # cleared while the connection is down: watchers poll
        self.on_watcher: Callable[[str], None] | None = None  # told the battle id of each announced watcher
        # called whenever LISTEN starts, again after an outage: announcements sent meanwhile were lost
        self.on_listening: Callable[[], None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="battle-event-relay")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    @contextmanager
    def doorbell(self, battle_id: str) -> Iterator[asyncio.Event]:
        """An event set whenever the battle has new rows (and when the connection comes back)."""
        bell = asyncio.Event()
        self._doorbells[battle_id].add(bell)
        try:
            yield bell
        finally:
            bells = self._doorbells[battle_id]
            bells.discard(bell)
            if not bells:
                del self._doorbells[battle_id]

    async def _listen(self) -> None:
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._dsn, autocommit=True, application_name=APPLICATION_NAME
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    await conn.execute(f"LISTEN {WATCH_CHANNEL}")
                    self.listening.set()
                    self._ring_all()  # anything sent while we were away is read now
                    if self.on_listening is not None:
                        self.on_listening()
                    async for notify in conn.notifies():
                        if notify.channel == CHANNEL:
                            self._ring(notify.payload)
                        elif self.on_watcher is not None:
                            self.on_watcher(notify.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.listening.is_set():
                    log.warning("battle event relay lost its connection (%s); watchers poll until it is back", exc)
                self.listening.clear()
                self._ring_all()
                await asyncio.sleep(RECONNECT_DELAY)

    def _ring(self, battle_id: str) -> None:
        for bell in self._doorbells.get(battle_id, ()):
            bell.set()

    def _ring_all(self) -> None:
        for bells in self._doorbells.values():
            for bell in bells:
                bell.set()


def is_postgresql(database_url: str) -> bool:
    return make_url(database_url).get_backend_name() == "postgresql"


def relay_for(database_url: str) -> EventRelay | None:
    """A relay on PostgreSQL; None on SQLite (one process, nothing to relay)."""
    return EventRelay(database_url) if is_postgresql(database_url) else None
