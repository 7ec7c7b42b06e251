"""Alembic environment: the schema comes from arena.db.tables only.

The database URL is the one `arena.db.migrate.upgrade` passes in, else
ARENA_DATABASE_URL / the SQLite default from Settings.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from arena.config import Settings
from arena.db.session import make_engine
from arena.db.tables import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return config.get_main_option("sqlalchemy.url") or Settings().resolved_database_url


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url())
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


# Any fixed number: the key of the PostgreSQL advisory lock migrations hold.
MIGRATION_LOCK = 0x6765_6F61_7265_6E61  # "geoarena"


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    # batch mode lets later migrations ALTER tables on SQLite too
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            # Replicas that start together would otherwise all run the same
            # migrations and all but one crash on "already exists"; the lock is
            # held to the end of the transaction, and the next one finds head.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
