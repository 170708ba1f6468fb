"""Per-field clocks for syncing memory through git.

Revision ID: 0012
Revises: 0011

Reserved so that work on several features can chain its migrations without conflicting heads;
it changes nothing until its feature fills it in.
"""

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
