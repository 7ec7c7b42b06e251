"""Engines and sessions. Built in the app's lifespan (or by a CLI command),
never at import time, so tests can point them anywhere.

Request handlers never commit: a synchronous handler gets a request-scoped
session that commits when the handler returns, before the response is sent;
an async handler hands its database work to `Database.run`, which runs it in
a worker thread in one transaction, so a locked SQLite file or a slow
PostgreSQL never stalls the event loop that carries every battle's stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Concatenate, ParamSpec, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from arena.config import DATABASE_CONNECTIONS

P = ParamSpec("P")
T = TypeVar("T")


def make_engine(url: str, connections: int = DATABASE_CONNECTIONS) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # All `connections` are kept once opened, none beyond: a pool of 10 with 20 overflow closed
    # each overflow connection as it came back and opened another for the next transaction, and
    # 500 streams opened at once spent their time connecting (their response heads 6.7 s -> 4.9 s
    # at p50 without it, benchmarks/http.py).
    return create_engine(url, pool_pre_ping=True, pool_size=connections, max_overflow=0)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


class Database:
    """The app's sessions, for handlers and background work."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessions = make_sessionmaker(engine)

    async def run(self, work: Callable[Concatenate[Session, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`work(session, ...)` in a worker thread, committed before it returns."""
        return await run_in_threadpool(self.transaction, work, *args, **kwargs)  # type: ignore[arg-type]

    def transaction(self, work: Callable[Concatenate[Session, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        with self.sessions.begin() as session:
            return work(session, *args, **kwargs)

    def session(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on error."""
        with self.sessions() as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    # WAL lets the SSE writers and page readers work at once; FKs are off by default.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
