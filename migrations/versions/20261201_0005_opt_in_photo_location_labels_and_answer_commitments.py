"""opt-in photo location labels and where each answer commits to

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 11:05:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "battle_labels",
        sa.Column("battle_id", sa.String(length=32), nullable=False),
        sa.Column("lat", sa.Float(), nullable=False),
        sa.Column("lon", sa.Float(), nullable=False),
        sa.Column("precision_km", sa.Float(), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("country", sa.String(length=2), nullable=False),
        sa.Column("continent", sa.String(length=2), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("source IN ('exif', 'pin', 'place')", name=op.f("ck_battle_labels_source")),
        sa.ForeignKeyConstraint(
            ["battle_id"], ["battles.id"], name=op.f("fk_battle_labels_battle_id_battles"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("battle_id", name=op.f("pk_battle_labels")),
    )
    with op.batch_alter_table("responses", schema=None) as batch_op:
        batch_op.add_column(sa.Column("commitment", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("responses", schema=None) as batch_op:
        batch_op.drop_column("commitment")
    op.drop_table("battle_labels")
