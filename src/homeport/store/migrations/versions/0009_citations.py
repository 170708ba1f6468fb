"""Citations to code on items, checked on read.

Revision ID: 0009
Revises: 0008

Reserved so that work on several features can chain its migrations without conflicting heads;
it changes nothing until its feature fills it in.
"""

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
