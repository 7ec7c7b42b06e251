"""propensity of each battle: the probability the sampler gave its pair

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 10:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # NULL for battles drawn before this column, imported ones and votes from FastChat files
    with op.batch_alter_table("battles", schema=None) as batch_op:
        batch_op.add_column(sa.Column("propensity", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("battles", schema=None) as batch_op:
        batch_op.drop_column("propensity")
