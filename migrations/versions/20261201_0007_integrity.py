"""integrity: the starter of each battle, per-day counters, spent challenges

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 11:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("battles", schema=None) as batch_op:
        batch_op.add_column(sa.Column("starter_hash", sa.String(length=64), server_default="", nullable=False))
    op.create_table(
        "integrity_counters",
        sa.Column("key", sa.String(length=100), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", "day", name=op.f("pk_integrity_counters")),
    )
    op.create_table(
        "spent_challenges",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_spent_challenges")),
    )
    with op.batch_alter_table("spent_challenges", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_spent_challenges_expires_at"), ["expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("spent_challenges", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_spent_challenges_expires_at"))
    op.drop_table("spent_challenges")
    op.drop_table("integrity_counters")
    with op.batch_alter_table("battles", schema=None) as batch_op:
        batch_op.drop_column("starter_hash")
