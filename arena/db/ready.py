"""Is the database ready for a command? Batch commands (`arena rank`,
`export`, `import`, ...) open the database only when its schema is at the
newest migration; otherwise they stop with one sentence naming the fix.

Only `arena db upgrade` and `arena serve` make or change the schema. A
SQLite file that does not exist is reported before an engine is built,
because connecting would leave an empty `arena.db` behind (or fail with
"unable to open database file" when its folder is missing)."""

from __future__ import annotations

from pathlib import Path

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from arena.db.migrate import alembic_config
from arena.db.session import make_engine

UNREACHABLE = "cannot open the database at"


class SchemaNotReady(ValueError):
    """The database has no schema, or not the newest one."""


def schema_problem(url: str) -> str:
    """'' when the database at `url` is at the newest migration, else a sentence saying what to do."""
    where = _where(url)
    sqlite_file = _sqlite_file(url)
    if sqlite_file is not None and not sqlite_file.is_file():
        return _not_ready(where)
    engine = make_engine(url)
    try:
        return _problem_with(engine, url, where)
    finally:
        engine.dispose()


def open_engine(url: str, *, unreachable_ok: bool = False) -> Engine:
    """An engine on a database at the newest migration, or SchemaNotReady.

    `unreachable_ok`: a server that does not answer yet is not an error (a
    command that retries, like `arena rank --every`); a missing schema is."""
    where = _where(url)
    sqlite_file = _sqlite_file(url)
    if sqlite_file is not None and not sqlite_file.is_file():
        raise SchemaNotReady(_not_ready(where))
    engine = make_engine(url)
    problem = _problem_with(engine, url, where)
    if problem and not (unreachable_ok and problem.startswith(UNREACHABLE)):
        engine.dispose()
        raise SchemaNotReady(problem)
    return engine


def _problem_with(engine: Engine, url: str, where: str) -> str:
    heads = set(ScriptDirectory.from_config(alembic_config(url)).get_heads())
    try:
        with engine.connect() as connection:
            current = set(MigrationContext.configure(connection).get_current_heads())
    except SQLAlchemyError as exc:
        detail = str(getattr(exc, "orig", None) or exc).splitlines() or [type(exc).__name__]
        return f"{UNREACHABLE} {where}: {detail[0][:200]}"
    return "" if current == heads else _not_ready(where)


def _not_ready(where: str) -> str:
    return f"the database at {where} has no schema yet (or is not at the newest migration): run `arena db upgrade`"


def _sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL; None for other databases and in-memory SQLite."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    if parsed.database.startswith("file:"):
        return None  # a URI filename: leave it to SQLite
    return Path(parsed.database)


def _where(url: str) -> str:
    sqlite_file = _sqlite_file(url)
    if sqlite_file is not None:
        return str(sqlite_file.resolve())
    return make_url(url).render_as_string(hide_password=True)
