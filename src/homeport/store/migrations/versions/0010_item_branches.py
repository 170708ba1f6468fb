"""The branch, HEAD commit and worktree each write was made in.

Revision ID: 0010
Revises: 0009

Reserved so that work on several features can chain its migrations without conflicting heads;
it changes nothing until its feature fills it in.
"""

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
