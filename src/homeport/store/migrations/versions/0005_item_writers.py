"""Who wrote each item version: principal, client name and version, tool.

Revision ID: 0005
Revises: 0004

A new table only, so stores of any earlier revision keep every item as it was; versions written
before it show no writer.
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "item_writers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("item_type", sa.String(32), nullable=False),
        sa.Column("item_id", sa.Integer, nullable=False),
        sa.Column("version", sa.Integer, nullable=True),
        sa.Column("principal", sa.String(200), nullable=False),
        sa.Column("client", sa.String(200), nullable=True),
        sa.Column("client_version", sa.String(100), nullable=True),
        sa.Column("tool", sa.String(100), nullable=True),
        sa.Column("written_at", sa.String(32), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_item_writers_item", "item_writers", ["item_type", "item_id"])


def downgrade() -> None:
    op.drop_index("ix_item_writers_item", table_name="item_writers")
    op.drop_table("item_writers")
