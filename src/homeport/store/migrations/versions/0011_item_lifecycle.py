"""Archived and expiring items, and tidy changesets.

Revision ID: 0011
Revises: 0010

Reserved so that work on several features can chain its migrations without conflicting heads;
it changes nothing until its feature fills it in.
"""

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
