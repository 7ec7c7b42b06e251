"""The battles running on this replica (`BattleRuns`): which stream starts a run,
which joins it, how many may run at once, and their leases.

The first stream to open a pending battle claims it in the database
(`arena.battles.claims`) and starts the run; a second stream in the same
process joins the run, and one on another replica follows it
(`arena.battles.following`), so the contenders never run twice. A run writes
its events for watchers elsewhere only once one of them asks
(`arena.battles.relay`). One battle's run is `run.BattleRun`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from arena.battles import repository
from arena.battles.claims import BattleClaims, Claim, Unclaimed
from arena.battles.events import (
    RECONNECT,
    RECONNECT_HINT,
)
from arena.battles.following import Following
from arena.battles.relay import EventOutbox, EventRelay
from arena.battles.run import BattleRun
from arena.contenders.base import (
    Contender,
)
from arena.errors import ClientError
from arena.images.store import ImageStore

log = logging.getLogger(__name__)

MAX_ANSWER_CHARS = 200_000
ABANDON_GRACE = 5.0  # seconds a battle with no watcher keeps running, for a reconnect
# A running battle's lease: its replica renews it every third of this; one not renewed for
# this long lost its replica (kill -9, a long database outage) and is abandoned by whoever looks.
LEASE_SECONDS = 30.0
MAX_BATTLES = 200  # running at once on one replica (ARENA_MAX_BATTLES)
DRAIN_RETRY_AFTER = 2  # seconds: by then the proxy sends the client to another replica
FULL_RETRY_AFTER = 5  # seconds a refused client is asked to wait: about the time battles take to free places


@dataclass
class BattleHooks:
    """What the pool policy wants to know of a run (all optional)."""

    # called with (contender name, ok) when a side finishes, or fails in a way that says its
    # provider is down (connection, timeout, 5xx, 429); never for a refusal of the content
    on_side_result: Callable[[str, bool], None] | None = None
    # called with the answers' and trajectories' texts; returns battle flags
    flag_battle: Callable[[Iterable[str]], list[str]] | None = None
    # called with (contender name, seconds to its first text or None, seconds to its whole answer)
    # when a side finished its answer
    on_side_timing: Callable[[str, float | None, float], None] | None = None
    # called with (contender name, "ready" | "failed" | "abandoned") for both sides of a battle
    # this replica ran, once it ended
    on_battle_end: Callable[[str, str], None] | None = None


class BattleRuns:
    """The battles this process is running, keyed by id."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        images: ImageStore,
        pool: dict[str, Contender],
        *,
        battle_timeout: float,
        hooks: BattleHooks | None = None,
        abandon_grace: float = ABANDON_GRACE,
        max_answer_chars: int = MAX_ANSWER_CHARS,
        lease: float = LEASE_SECONDS,
        max_battles: int = MAX_BATTLES,
        relay: EventRelay | None = None,
    ) -> None:
        self.max_battles = max_battles
        # places held by battles being made here: no lapse while their creation is in progress
        self._making: set[str] = set()
        # places held by battles made here whose stream has not opened: battle id -> when it lapses
        self._unopened: dict[str, float] = {}
        self._slot_ids = itertools.count()
        self.relay = relay
        # events for watchers on other replicas, one writer for every battle (with a relay only)
        self.outbox = EventOutbox(sessions) if relay is not None else None
        # watchers announced of battles not running here: of one whose run starts in a moment
        # (claimed, not yet started), or one that ended here just before: battle id -> when
        self._announced: dict[str, float] = {}
        self._ended_here: dict[str, float] = {}
        if relay is not None:
            relay.on_watcher = self._watcher_elsewhere
            relay.on_listening = self._share_all
        self.draining = False  # set by `drain`: no new battles here, watchers go elsewhere
        self.max_answer_chars = max_answer_chars
        self.lease = lease
        self.sessions = sessions
        self.images = images
        self.pool = pool
        self.battle_timeout = battle_timeout
        self.abandon_grace = abandon_grace
        self.hooks = hooks or BattleHooks()
        self._runs: dict[str, BattleRun] = {}
        self._starting: set[asyncio.Task[BattleRun | Unclaimed | None]] = set()  # claims being made
        self._writes: set[asyncio.Task[None]] = set()  # database writes in worker threads (`write`)
        self.claims = BattleClaims(sessions, images)  # streams opened at once claim in one transaction
        self.following = Following(sessions, relay, self)  # streams of battles running elsewhere
        self._leases: asyncio.Task[None] | None = None  # renews the leases of the runs

    @property
    def running(self) -> int:
        return len(self._runs)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        """Hold one of the replica's `max_battles` places while a battle is made, or refuse with
        503 and Retry-After when they are taken: better than admitting a battle whose streams
        would then wait for upstream connections and fail midway. The place passes to the run
        when its stream opens here; when it opens on another replica (or worker), that one runs
        and counts it, and this one lets the place go once the database says so; if no stream
        comes, the place lapses after a lease."""
        if self.draining:
            raise ClientError(
                503,
                "shutting_down",
                "This server is restarting; please try again in a moment.",
                headers={"Retry-After": str(DRAIN_RETRY_AFTER)},
            )
        if not self._has_room():
            await self._release_opened_elsewhere()
        if not self._has_room():
            raise ClientError(
                503,
                "arena_full",
                "The arena is answering as many battles as it can right now; please try again in a few seconds.",
                headers={"Retry-After": str(FULL_RETRY_AFTER)},
            )
        held = Slot(key=f"making-{next(self._slot_ids)}")
        self._making.add(held.key)
        try:
            yield held
        finally:
            self._making.discard(held.key)
            if held.battle_id is not None and held.battle_id not in self._runs:
                self._unopened[held.battle_id] = time.monotonic() + self.lease

    @property
    def places_taken(self) -> int:
        return self.running + len(self._making) + len(self._unopened)

    def _has_room(self) -> bool:
        now = time.monotonic()
        for battle_id in [b for b, lapses in self._unopened.items() if lapses <= now]:
            del self._unopened[battle_id]
        return self.places_taken < self.max_battles

    async def _release_opened_elsewhere(self) -> None:
        """Let go of the places of battles made here that another process has started since
        (it holds them now), asking the database only when the replica looks full."""
        battle_ids = list(self._unopened)
        if not battle_ids:
            return
        try:
            pending = await asyncio.to_thread(self._still_pending, battle_ids)
        except Exception:  # a database outage: the places stay held, the battle is refused
            log.warning("could not ask which of %d battle(s) have started", len(battle_ids), exc_info=True)
            return
        for battle_id in battle_ids:
            if battle_id not in pending:
                self._unopened.pop(battle_id, None)

    def _still_pending(self, battle_ids: list[str]) -> set[str]:
        with self.sessions() as session:
            return repository.still_pending(session, battle_ids)

    async def open(self, battle_id: str) -> AsyncIterator[str] | None:
        """SSE text for one watcher of the battle, or None when there is no such battle.

        A pending battle is claimed and started here, before the response begins: the claim
        also says whether the battle exists, so a stream opens in one transaction, not two
        (500 streams opened at once queued 1,000 for the database's connections)."""
        run = self._runs.get(battle_id)
        if run is None and self.draining:
            if not await asyncio.to_thread(self._exists, battle_id):
                return None
        elif run is None:
            # shielded: a client gone while its claim is made leaves a run that starts anyway
            # and is cancelled after the lease, not a battle held `running` by nobody
            starting = asyncio.create_task(self._claim_and_start(battle_id))
            self._starting.add(starting)
            starting.add_done_callback(self._starting.discard)
            started = await asyncio.shield(starting)
            if started is Unclaimed.MISSING:
                return None
            run = started if isinstance(started, BattleRun) else None
        return self._stream(battle_id, run)

    async def _stream(self, battle_id: str, run: BattleRun | None) -> AsyncIterator[str]:
        yield RECONNECT_HINT
        # another stream of this process may have claimed it while this one asked
        run = run or self._runs.get(battle_id)
        if run is not None:
            async for chunk in run.follow():
                yield chunk
            return
        if self.draining:
            # A battle this replica is not running: the stream closes without `end`, and
            # the browser reconnects by itself, to a replica that is staying up.
            yield RECONNECT
            return
        async for chunk in self.following.follow(battle_id):
            yield chunk

    def recover(self) -> int:
        """At start-up: abandon the battles whose replica died with them (blocking; call it in a thread)."""
        with self.sessions.begin() as session:
            count = repository.abandon_stale(session, timedelta(seconds=self.lease))
        if count:
            log.warning("abandoned %d battle(s) left running by a stopped replica", count)
        return count

    async def drain(self, grace: float) -> tuple[int, int]:
        """Stop taking battles and let the running ones finish within `grace` seconds; the
        rest are abandoned (their watchers get `end`). Returns (finished, abandoned)."""
        self.draining = True
        tasks = [run.task for run in self._runs.values()]
        if not tasks:
            return 0, 0
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return len(tasks) - len(pending), len(pending)

    async def shutdown(self) -> None:
        # a claim being made ends in a run (cancelled below) or a battle marked failed
        await asyncio.gather(*self._starting, return_exceptions=True)
        for run in list(self._runs.values()):
            run.task.cancel()
        await asyncio.gather(*(r.task for r in self._runs.values()), return_exceptions=True)
        if self._leases is not None:
            self._leases.cancel()
            await asyncio.gather(self._leases, return_exceptions=True)
        # a cancelled run's last write goes on in its thread: the engine is disposed after this
        await asyncio.gather(*self._writes, return_exceptions=True)
        if self.outbox is not None:
            await self.outbox.settle()

    async def write(self, store: Callable[..., None], *args: Any) -> None:
        """`store(*args)` in a worker thread. Cancelling the caller does not stop a thread, so the
        write is shielded and `shutdown` waits for it: it lands, and its connection is returned
        before the engine is disposed."""
        task = asyncio.ensure_future(asyncio.to_thread(store, *args))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        await asyncio.shield(task)

    async def _claim_and_start(self, battle_id: str) -> BattleRun | Unclaimed | None:
        """The battle's run, started here; or why not; None when its claim failed (the battle
        we hold is then marked failed, and the stream's replay says so)."""
        try:
            claimed = await self.claims.claim(battle_id)
        except Exception:
            # e.g. the photo is not in this replica's image store
            log.exception("battle %s could not start", battle_id)
            await self.write(self._persist_unstarted, battle_id)
            return None
        if isinstance(claimed, Unclaimed):
            return claimed
        run = self._start(battle_id, claimed)
        # a client gone before its response began never follows the run
        asyncio.get_running_loop().call_later(self.lease, run.cancel_if_never_watched)
        return run

    def _exists(self, battle_id: str) -> bool:
        with self.sessions() as session:
            return repository.battle_exists(session, battle_id)

    def _start(self, battle_id: str, claimed: Claim) -> BattleRun:
        self._unopened.pop(battle_id, None)  # its place passes to the run
        run = BattleRun(self, battle_id, claimed.prompt, claimed.image, claimed.sides)
        self._runs[battle_id] = run
        run.task = asyncio.create_task(run.run(), name=f"battle-{battle_id}")
        run.task.add_done_callback(lambda _: self._run_ended(battle_id))
        if self._announced.pop(battle_id, None) is not None:
            run.share_events()
        if self._leases is None or self._leases.done():
            self._leases = asyncio.create_task(self._renew_leases(), name="battle-leases")
        return run

    def _run_ended(self, battle_id: str) -> None:
        self._runs.pop(battle_id, None)
        if self.outbox is not None:
            _remember(self._ended_here, battle_id, self.lease)

    def _watcher_elsewhere(self, battle_id: str) -> None:
        """A watcher on another replica asks for the battle's events (every replica hears it)."""
        run = self._runs.get(battle_id)
        if run is not None:
            run.share_events()
        elif battle_id in self._ended_here and self.outbox is not None:
            # over before it asked, with no rows written: its doorbell sends it to the stored replay
            self.outbox.ring(battle_id)
        else:
            _remember(self._announced, battle_id, self.lease)

    def _share_all(self) -> None:
        """After a LISTEN outage, whose announcements were lost: any battle running here may
        have a watcher elsewhere."""
        for run in self._runs.values():
            run.share_events()

    async def _renew_leases(self) -> None:
        """Every lease / 3, while battles run here, renew all their leases in one statement: a
        renewal a battle was a transaction a battle every ten seconds, 50 a second at 500."""
        while self._runs:
            await asyncio.sleep(self.lease / 3)
            battle_ids = list(self._runs)
            if not battle_ids:
                return
            try:
                await self.write(self._persist_leases, battle_ids)
            except Exception:  # a database outage: the runs go on; their leases may lapse
                log.warning("could not renew the leases of %d battle(s)", len(battle_ids), exc_info=True)

    def _persist_leases(self, battle_ids: list[str]) -> None:
        with self.sessions.begin() as session:
            repository.renew_leases(session, battle_ids)

    def _persist_unstarted(self, battle_id: str) -> None:
        with self.sessions.begin() as session:
            repository.finish_battle(session, battle_id, "failed", [])


@dataclass
class Slot:
    """A place among the replica's running battles; `bind` it to the battle made in it."""

    key: str
    battle_id: str | None = None

    def bind(self, battle_id: str) -> None:
        self.battle_id = battle_id


def _remember(times: dict[str, float], battle_id: str, keep: float) -> None:
    """Note when, forgetting what is older than `keep` seconds (the oldest come first)."""
    now = time.monotonic()
    times.pop(battle_id, None)
    times[battle_id] = now
    while times and next(iter(times.values())) < now - keep:
        del times[next(iter(times))]
