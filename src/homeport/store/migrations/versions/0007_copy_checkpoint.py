"""The checkpoint of an unfinished `homeport copy` into this workspace.

Revision ID: 0007
Revises: 0006

At most one row. While it exists the workspace holds a partial copy: stores refuse to open it for
anything but `homeport copy`, which resumes from `done` if its source still has the checksum recorded here.
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "copy_checkpoint",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("source_checksum", sa.String(64), nullable=False),
        sa.Column("done", sa.Integer, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("started_at", sa.String(32), nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("copy_checkpoint")
