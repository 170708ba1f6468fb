"""Vectors of items for search by meaning (the optional `semantic` extra fills them).

Revision ID: 0006
Revises: 0005

Created empty: every item is then pending, and a server with the extra embeds them in the background.
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "item_vectors",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("item_type", sa.String(32), nullable=False),
        sa.Column("item_id", sa.Integer, nullable=False),
        sa.Column("chunk", sa.Integer, nullable=False),
        sa.Column("model", sa.String(100), nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_item_vectors_item", "item_vectors", ["item_type", "item_id", "model", "chunk"])


def downgrade() -> None:
    op.drop_index("ix_item_vectors_item", table_name="item_vectors")
    op.drop_table("item_vectors")
