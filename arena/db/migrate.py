"""Runs Alembic migrations: the only way the schema is made or changed."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at `url` up to `revision` (creating SQLite's folder)."""
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


@lru_cache(maxsize=1)
def head_revisions() -> tuple[str, ...]:
    """The revisions this code expects (read once from migrations/)."""
    return tuple(sorted(ScriptDirectory.from_config(alembic_config("sqlite://")).get_heads()))


def current_revisions(connection: Connection) -> tuple[str, ...]:
    """The revisions the database was migrated to (empty before the first)."""
    return tuple(sorted(MigrationContext.configure(connection).get_current_heads()))
