"""The workspace a store file named with `--store sqlite:///FILE` holds.

Revision ID: 0013
Revises: 0012

One row at most, written by the first call that opens such a file (homeport.store.binding). A
project's own .homeport/homeport.db never gets one: its place already says whose it is.
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "store_workspace",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("bound_at", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("store_workspace")
