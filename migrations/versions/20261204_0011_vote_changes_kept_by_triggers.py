"""vote changes kept by triggers, and the database's identity, for ranking's copy of the votes

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04 15:20:00

`arena rank` keeps a columnar copy of the votes (`arena/export/vote_copy.py`)
and brings it up to date from `vote_changes`: a row naming the battle for
every insert, update or delete of a vote, a battle, an answer or a location
label, written by the database itself, so no code path can change what
ranking reads without saying so. SQLite logs a row at a time; PostgreSQL a
statement at a time (its transition tables), each row carrying the writing
transaction's id, since there a later id can commit first. The token names
this database, so a copy is never applied to another one at the same address.
"""

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# table -> the column naming the battle
WATCHED = {"votes": "battle_id", "battles": "id", "responses": "battle_id", "battle_labels": "battle_id"}
SQLITE_NOW = "(julianday('now') - 2440587.5) * 86400.0"


def upgrade() -> None:
    postgresql = op.get_context().dialect.name == "postgresql"
    op.create_table(
        "vote_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("battle_id", sa.String(length=32), nullable=False),
        # epoch seconds, the database's clock: old rows are trimmed by it
        sa.Column(
            "at",
            sa.Float(),
            nullable=False,
            server_default=sa.text("extract(epoch from now())" if postgresql else f"({SQLITE_NOW})"),
        ),
        # PostgreSQL: the writing transaction's id (NULL on SQLite, whose writers commit in id order)
        sa.Column(
            "txid",
            sa.BigInteger(),
            nullable=True,
            server_default=sa.text("(pg_current_xact_id()::text)::bigint") if postgresql else None,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vote_changes")),
        # AUTOINCREMENT: SQLite never hands out an id again, even once the log is trimmed empty
        sqlite_autoincrement=True,
    )
    op.create_index(op.f("ix_vote_changes_at"), "vote_changes", ["at"])
    op.create_index(op.f("ix_vote_changes_txid"), "vote_changes", ["txid"])
    op.create_table(
        "database_identity",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_database_identity")),
    )
    op.execute(f"INSERT INTO database_identity (id, token) VALUES (1, '{uuid.uuid4().hex}')")
    if postgresql:
        _postgresql_triggers()
    else:
        _sqlite_triggers()


def _sqlite_triggers() -> None:
    for table, column in WATCHED.items():
        for event, rows in (("INSERT", ("NEW",)), ("UPDATE", ("NEW", "OLD")), ("DELETE", ("OLD",))):
            battles = " UNION ".join(f"SELECT {row}.{column}, {SQLITE_NOW}" for row in rows)
            op.execute(
                f"CREATE TRIGGER vote_changes_{table}_{event.lower()} AFTER {event} ON {table} "
                f"BEGIN INSERT INTO vote_changes (battle_id, at) {battles}; END"
            )


def _postgresql_triggers() -> None:
    # one function per watched column; a statement's rows are logged once per battle
    for column in sorted(set(WATCHED.values())):
        op.execute(
            f"CREATE FUNCTION log_vote_changes_by_{column}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            "BEGIN\n"
            "  IF TG_OP <> 'DELETE' THEN\n"
            f"    INSERT INTO vote_changes (battle_id) SELECT DISTINCT {column} FROM new_rows;\n"
            "  END IF;\n"
            "  IF TG_OP <> 'INSERT' THEN\n"
            f"    INSERT INTO vote_changes (battle_id) SELECT DISTINCT {column} FROM old_rows;\n"
            "  END IF;\n"
            "  RETURN NULL;\n"
            "END $$"
        )
    for table, column in WATCHED.items():
        # a trigger with transition tables takes one event
        for event, referencing in (
            ("INSERT", "NEW TABLE AS new_rows"),
            ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
            ("DELETE", "OLD TABLE AS old_rows"),
        ):
            op.execute(
                f"CREATE TRIGGER vote_changes_{table}_{event.lower()} AFTER {event} ON {table} "
                f"REFERENCING {referencing} FOR EACH STATEMENT EXECUTE FUNCTION log_vote_changes_by_{column}()"
            )


def downgrade() -> None:
    postgresql = op.get_context().dialect.name == "postgresql"
    for table in WATCHED:
        for event in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER vote_changes_{table}_{event}" + (f" ON {table}" if postgresql else ""))
    if postgresql:
        for column in sorted(set(WATCHED.values())):
            op.execute(f"DROP FUNCTION log_vote_changes_by_{column}()")
    op.drop_table("database_identity")
    op.drop_index(op.f("ix_vote_changes_txid"), table_name="vote_changes")
    op.drop_index(op.f("ix_vote_changes_at"), table_name="vote_changes")
    op.drop_table("vote_changes")
