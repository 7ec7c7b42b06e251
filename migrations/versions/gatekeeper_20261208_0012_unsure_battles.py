"""unsure battles: the gatekeeper's tag, and a re-check's answer

Revision ID: gatekeeper_0012
Revises: 0011
Create Date: 2026-12-08 01:00:00

A battle whose prompt the gatekeeper was unsure of still runs; it is tagged
`unsure`, and `arena rank` leaves its vote out only when a re-check (the LLM
judge, or a reviewer) answers `not_geographic` (arena/gatekeeper/recheck.py).
Plain ADD COLUMN on both databases: the battles table keeps its triggers.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "gatekeeper_0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("battles", sa.Column("unsure", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column("battles", sa.Column("recheck", sa.String(length=16), nullable=True))
    op.add_column("battles", sa.Column("rechecked_by", sa.String(length=100), nullable=True))


def downgrade() -> None:
    op.drop_column("battles", "rechecked_by")
    op.drop_column("battles", "recheck")
    op.drop_column("battles", "unsure")
