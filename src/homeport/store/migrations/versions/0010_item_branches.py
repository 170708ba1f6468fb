"""The branch, HEAD commit and worktree each write was made in.

Revision ID: 0010
Revises: 0009

Each write of an item version (`item_versions`) and of a context or link (`item_writers`) gets the
branch (NULL when HEAD was detached), the HEAD commit and the work tree it was made in. Decisions and
system patterns first written on a branch other than the default branch get a row in
`item_branches` (`homeport.store.branches`). Existing writes keep NULL there and existing items get
no row: they were made on the default branch, and are seen on every branch.
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_PLACE = ("item_versions", "item_writers")


def upgrade() -> None:
    for table in _PLACE:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("branch", sa.String(255), nullable=True))
            batch.add_column(sa.Column("head_commit", sa.String(64), nullable=True))
            batch.add_column(sa.Column("worktree", sa.Text, nullable=True))
    op.create_table(
        "item_branches",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("item_type", sa.String(32), nullable=False),
        sa.Column("item_id", sa.Integer, nullable=False),
        sa.Column("branch", sa.String(255), nullable=True),
        sa.Column("head_commit", sa.String(64), nullable=True),
        sa.Column("fresh", sa.Boolean, nullable=False),
        sa.Column("worktree", sa.Text, nullable=True),
        sa.Column("written_at", sa.String(32), nullable=False),
        sa.Column("promoted_at", sa.String(32), nullable=True),
        sa.UniqueConstraint("item_type", "item_id", name="uq_item_branches_item"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_item_branches_branch", "item_branches", ["branch"])


def downgrade() -> None:
    op.drop_index("ix_item_branches_branch", table_name="item_branches")
    op.drop_table("item_branches")
    for table in _PLACE:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("worktree")
            batch.drop_column("head_commit")
            batch.drop_column("branch")
