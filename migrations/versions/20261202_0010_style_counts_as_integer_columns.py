"""style counts of each answer as integer columns, so ranking reads no JSON

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 23:45:00

Each column sums counts of the stored `style` JSON (the style fit's length,
list, header and emphasis features), or copies its GPS mentions and tool
calls. The backfill is one UPDATE in the database. The paths are written out
here, not imported, so the migration keeps doing what it did when it was written.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# column -> the paths in the style JSON it sums (a missing count is 0)
SUMS: dict[str, tuple[tuple[str, ...], ...]] = {
    "style_tokens": (("tokens",),),
    "style_list_items": (("list_count", "ordered"), ("list_count", "unordered")),
    "style_headers": tuple(("header_count", f"h{i}") for i in range(1, 7)),
    "style_emphasis": (("bold_count", "**"), ("bold_count", "__"), ("italic_count", "*"), ("italic_count", "_")),
    "style_gps": (("gps_count",),),
}
COLUMNS = (*SUMS, "style_tool_calls")


def upgrade() -> None:
    with op.batch_alter_table("responses", schema=None) as batch_op:
        for name in COLUMNS:
            batch_op.add_column(sa.Column(name, sa.Integer(), nullable=True))
    postgresql = op.get_context().dialect.name == "postgresql"

    def value(path: tuple[str, ...]) -> str:
        if postgresql:  # s.counts: the JSON parsed once per answer
            return f"(s.counts #>> '{{{','.join(path)}}}')::numeric"
        keys = ".".join(f'"{key}"' for key in path)  # quoted: "**" is a key, not a wildcard
        return f"json_extract(style, '$.{keys}')"

    sums = [f"{name} = {' + '.join(f'COALESCE({value(p)}, 0)' for p in paths)}" for name, paths in SUMS.items()]
    sums.append(f"style_tool_calls = {value(('tool_calls',))}")
    # JSON null (a Core write of None) is no counts, as SQL NULL is
    if postgresql:
        op.execute(
            f"UPDATE responses r SET {', '.join(sums)} "
            "FROM (SELECT id, style::jsonb AS counts FROM responses WHERE style::text <> 'null') s WHERE r.id = s.id"
        )
    else:
        op.execute(f"UPDATE responses SET {', '.join(sums)} WHERE style IS NOT NULL AND style <> 'null'")


def downgrade() -> None:
    with op.batch_alter_table("responses", schema=None) as batch_op:
        for name in reversed(COLUMNS):
            batch_op.drop_column(name)
