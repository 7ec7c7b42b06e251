"""battle events for watchers on other replicas, and outage cool-downs shared by all

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 14:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "battle_events",
        sa.Column("battle_id", sa.String(length=32), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=16), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("battle_id", "seq", name=op.f("pk_battle_events")),
    )
    op.create_index(op.f("ix_battle_events_created_at"), "battle_events", ["created_at"])
    op.create_table(
        "contender_health",
        sa.Column("contender", sa.String(length=100), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("cooling_until", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("contender", name=op.f("pk_contender_health")),
    )


def downgrade() -> None:
    op.drop_table("contender_health")
    op.drop_index(op.f("ix_battle_events_created_at"), table_name="battle_events")
    op.drop_table("battle_events")
