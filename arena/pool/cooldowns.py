"""Outage cool-downs: consecutive provider failures per contender and, after
`failure_threshold` of them, how long it sits out.

`MemoryCooldowns` keeps them in this process (tests, tools); `SharedCooldowns`
keeps them in the database, so a contender cooled down on one replica is
cooled down on all of them, and a restart does not forget an outage.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol, cast

from sqlalchemy import Table, case, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session, sessionmaker

from arena.db.tables import ContenderHealth

HEALTH = cast(Table, ContenderHealth.__table__)


@dataclass(frozen=True)
class Outage:
    threshold: int  # consecutive failures that start a cool-down
    seconds: float  # its length


class Cooldowns(Protocol):
    def record(self, name: str, ok: bool, now: float, outage: Outage) -> None:
        """A side finished (`ok`) or its provider was down."""

    def cooling(self, now: float) -> dict[str, float]:
        """Contenders cooling down at `now`, with the epoch second each comes back."""


class MemoryCooldowns:
    def __init__(self) -> None:
        self._failures: dict[str, int] = {}
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    @classmethod
    def of(cls, cooling: dict[str, float]) -> MemoryCooldowns:
        """A book holding these cool-downs (contender -> epoch second it comes back)."""
        book = cls()
        book._until = dict(cooling)
        return book

    def record(self, name: str, ok: bool, now: float, outage: Outage) -> None:
        with self._lock:
            if ok:
                self._failures[name] = 0
                return
            failures = self._failures.get(name, 0) + 1
            if failures >= outage.threshold:
                self._until[name] = now + outage.seconds
                failures = 0  # after the cool-down it gets a full set of chances
            self._failures[name] = failures

    def cooling(self, now: float) -> dict[str, float]:
        with self._lock:
            return {name: until for name, until in self._until.items() if now < until}


class SharedCooldowns:
    """The same rules in `contender_health`, one atomic statement per result: failures
    reported at once by several replicas are all counted."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    def record(self, name: str, ok: bool, now: float, outage: Outage) -> None:
        with self.sessions.begin() as session:
            if ok:  # the common case writes nothing unless a failure streak is to be reset
                # on the Core table: the ORM's update looks for loaded objects to change first
                session.execute(
                    update(HEALTH).where(HEALTH.c.contender == name, HEALTH.c.failures > 0).values(failures=0)
                )
                return
            dialect = session.get_bind().dialect.name
            insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
            first_trips = outage.threshold <= 1
            row = insert(ContenderHealth).values(
                contender=name,
                failures=0 if first_trips else 1,
                cooling_until=now + outage.seconds if first_trips else 0.0,
            )
            trips = ContenderHealth.failures + 1 >= outage.threshold
            session.execute(
                row.on_conflict_do_update(
                    index_elements=[ContenderHealth.contender],
                    set_={
                        "failures": case((trips, 0), else_=ContenderHealth.failures + 1),
                        "cooling_until": case((trips, now + outage.seconds), else_=ContenderHealth.cooling_until),
                    },
                )
            )

    def cooling(self, now: float) -> dict[str, float]:
        with self.sessions() as session:
            rows = session.execute(
                select(ContenderHealth.contender, ContenderHealth.cooling_until).where(
                    ContenderHealth.cooling_until > now
                )
            )
            return {name: float(until) for name, until in rows}
