"""Per-field clocks for syncing memory through git (`homeport.sync`).

Revision ID: 0012
Revises: 0011

Three tables, empty until the first `homeport sync`: the item files this store has synced with the
hybrid logical clock of each field (`sync_items`), the sync's own state (`sync_state`), and the
concurrent edits a merge settled (`sync_conflicts`).
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sync_items",
        sa.Column("doc", sa.String(120), primary_key=True),
        sa.Column("item_type", sa.String(32), nullable=False),
        sa.Column("item_id", sa.Integer, nullable=True),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("clocks", sa.Text, nullable=False),
    )
    op.create_index("ix_sync_items_item", "sync_items", ["item_type", "item_id"])
    op.create_table(
        "sync_state",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "sync_conflicts",
        sa.Column("doc", sa.String(120), nullable=False),
        sa.Column("field", sa.String(100), nullable=False),
        sa.Column("lost", sa.String(40), nullable=False),
        sa.Column("won", sa.String(40), nullable=False),
        sa.Column("lost_value", sa.Text, nullable=True),
        sa.Column("detected_at", sa.String(32), nullable=False),
        sa.Column("resolved_at", sa.String(32), nullable=True),
        sa.PrimaryKeyConstraint("doc", "field", "lost", name="pk_sync_conflicts"),
    )


def downgrade() -> None:
    op.drop_table("sync_conflicts")
    op.drop_table("sync_state")
    op.drop_index("ix_sync_items_item", table_name="sync_items")
    op.drop_table("sync_items")
