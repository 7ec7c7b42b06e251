"""upload counts for the rate limit (every attempt, refused ones included)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 11:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "upload_counts",
        sa.Column("ip_hash", sa.String(length=64), nullable=False),
        sa.Column("minute", sa.Integer(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("ip_hash", "minute", name=op.f("pk_upload_counts")),
    )


def downgrade() -> None:
    op.drop_table("upload_counts")
