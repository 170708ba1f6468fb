"""Initial memory schema: contexts with history, decisions, progress, custom data, tags, search.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "contexts",
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "context_history",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("changed_at", sa.String(32), nullable=False),
        sa.UniqueConstraint("kind", "version", name="uq_context_history_kind_version"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("rationale", sa.Text),
        sa.Column("implementation_details", sa.Text),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "progress",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("status", sa.String(64), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("parent_id", sa.Integer, sa.ForeignKey("progress.id"), nullable=True),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_progress_parent", "progress", ["parent_id"])
    op.create_index("ix_progress_status", "progress", ["status"])
    op.create_table(
        "custom_data",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("category", sa.String(200), nullable=False),
        sa.Column("key", sa.String(500), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
        sa.UniqueConstraint("category", "key", name="uq_custom_data_category_key"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "item_tags",
        sa.Column("item_type", sa.String(32), nullable=False),
        sa.Column("item_id", sa.Integer, nullable=False),
        sa.Column("tag", sa.String(200), nullable=False),
        sa.Column("tag_key", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("item_type", "item_id", "tag_key", name="pk_item_tags"),
    )
    op.create_index("ix_item_tags_key", "item_tags", ["tag_key"])
    if op.get_bind().dialect.name == "sqlite":
        # One index over every item type; rows are written by homeport.store.search.
        op.execute(
            "CREATE VIRTUAL TABLE search_index USING fts5("
            "item_type UNINDEXED, item_id UNINDEXED, title, body, tags, tokenize='porter unicode61')"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE search_index")
    for table in ("item_tags", "custom_data", "progress", "decisions", "context_history", "contexts"):
        op.drop_table(table)
