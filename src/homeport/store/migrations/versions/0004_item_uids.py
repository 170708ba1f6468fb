"""Item uids: a ULID per item (decisions, progress, system patterns, custom data), kept across machines.

Revision ID: 0004
Revises: 0003

Every existing item gets one, its time part from the item's created_at.
"""

import os
from datetime import datetime

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_TABLES = {
    "decision": "decisions",
    "progress": "progress",
    "system_pattern": "system_patterns",
    "custom_data": "custom_data",
}
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _ulid(created_at: str) -> str:
    """Frozen here on purpose (a migration must not change with the code): 48 bits of milliseconds, 80 random."""
    millis = int(datetime.fromisoformat(created_at.replace("Z", "+00:00")).timestamp() * 1000)
    value = (millis << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def upgrade() -> None:
    op.create_table(
        "item_uids",
        sa.Column("item_type", sa.String(32), nullable=False),
        sa.Column("item_id", sa.Integer, nullable=False),
        sa.Column("uid", sa.String(26), nullable=False),
        sa.PrimaryKeyConstraint("item_type", "item_id", name="pk_item_uids"),
        sa.UniqueConstraint("uid", name="uq_item_uids_uid"),
        sqlite_with_rowid=False,
    )
    bind = op.get_bind()
    rows = [
        {"t": item_type, "i": item_id, "u": _ulid(created_at)}
        for item_type, table in _TABLES.items()
        for item_id, created_at in bind.execute(sa.text(f"SELECT id, created_at FROM {table}"))
    ]
    if rows:
        bind.execute(sa.text("INSERT INTO item_uids (item_type, item_id, uid) VALUES (:t, :i, :u)"), rows)


def downgrade() -> None:
    op.drop_table("item_uids")
