"""Archived and expiring items, and tidy changesets.

Revision ID: 0011
Revises: 0010

`item_states` holds what an item's lifecycle says beyond its fields (archived, superseded, valid
until, pinned); an item without a row is none of these, so existing items need no row. `changesets`
holds tidy proposals and what applying them replaced (`homeport.store.tidy`).
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "item_states",
        sa.Column("item_type", sa.String(32), nullable=False),
        sa.Column("item_id", sa.Integer, nullable=False),
        sa.Column("archived", sa.Boolean, nullable=False),
        sa.Column("superseded_type", sa.String(32), nullable=True),
        sa.Column("superseded_id", sa.Integer, nullable=True),
        sa.Column("valid_until", sa.String(32), nullable=True),
        sa.Column("pinned", sa.Boolean, nullable=False),
        sa.Column("changeset_id", sa.Integer, nullable=True),
        sa.Column("updated_at", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("item_type", "item_id", name="pk_item_states"),
    )
    op.create_table(
        "changesets",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("scope", sa.String(64), nullable=True),
        sa.Column("entries", sa.Text, nullable=False),
        sa.Column("hashes", sa.Text, nullable=False),
        sa.Column("before", sa.Text, nullable=True),
        sa.Column("after", sa.Text, nullable=True),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("applied_at", sa.String(32), nullable=True),
        sa.Column("applied_by", sa.String(200), nullable=True),
        sa.Column("reverted_at", sa.String(32), nullable=True),
        sa.Column("reverted_by", sa.String(200), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_changesets_status", "changesets", ["status"])


def downgrade() -> None:
    op.drop_index("ix_changesets_status", table_name="changesets")
    op.drop_table("changesets")
    op.drop_table("item_states")
