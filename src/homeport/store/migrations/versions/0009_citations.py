"""Citations to code on items, checked on read: the table `item_citations`.

Revision ID: 0009
Revises: 0008

One row per citation of an item (decision, progress, system pattern, custom data), as
`homeport.store.schema.item_citations` describes. Existing items have none, so nothing is copied.
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "item_citations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("item_type", sa.String(32), nullable=False),
        sa.Column("item_id", sa.Integer, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("start_line", sa.Integer, nullable=False),
        sa.Column("end_line", sa.Integer, nullable=False),
        sa.Column("symbol", sa.Text, nullable=True),
        sa.Column("blob_id", sa.String(64), nullable=True),
        sa.Column("span_hash", sa.String(64), nullable=False),
        sa.Column("line_keys", sa.Text, nullable=False),
        sa.Column("span_chars", sa.Integer, nullable=False),
        sa.Column("quote", sa.Text, nullable=False),
        sa.Column("cited_at", sa.String(32), nullable=False),
        sa.Column("confirmed_at", sa.String(32), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_item_citations_item", "item_citations", ["item_type", "item_id", "position"])


def downgrade() -> None:
    op.drop_index("ix_item_citations_item", "item_citations")
    op.drop_table("item_citations")
