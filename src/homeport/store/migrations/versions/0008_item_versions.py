"""Every version of every item: decisions, progress, system patterns, custom data.

Revision ID: 0008
Revises: 0007

Each existing item gets version 1: its fields as they are now, written at its updated_at, by the
writer of its last recorded write (none when no write was recorded). That write's `item_writers` row
moves into version 1 (from now on these item types name their writer only in their versions; their
earlier writes stay in `item_writers`). The fields are built here, frozen (a migration must not
change with the code), exactly as `homeport.store.versions` builds them.
"""

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_FIELDS = {
    "decision": ("decisions", ("summary", "rationale", "implementation_details"), True),
    "progress": ("progress", ("status", "description", "parent_id"), False),
    "system_pattern": ("system_patterns", ("name", "description"), True),
    "custom_data": ("custom_data", ("category", "key", "value"), False),
}


def upgrade() -> None:
    op.create_table(
        "item_versions",
        sa.Column("item_type", sa.String(32), nullable=False),
        sa.Column("item_id", sa.Integer, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("fields", sa.Text, nullable=False),
        sa.Column("deleted", sa.Boolean, nullable=False),
        sa.Column("principal", sa.String(200), nullable=True),
        sa.Column("client", sa.String(200), nullable=True),
        sa.Column("client_version", sa.String(100), nullable=True),
        sa.Column("tool", sa.String(100), nullable=True),
        sa.Column("written_at", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("item_type", "item_id", "version", name="pk_item_versions"),
    )
    bind = op.get_bind()
    rows: list[dict[str, Any]] = []
    moved: list[int] = []  # the item_writers rows that version 1 now holds
    for item_type, (table, names, tagged) in _FIELDS.items():
        tags: dict[int, list[str]] = {}
        if tagged:
            found = bind.execute(sa.text("SELECT item_id, tag FROM item_tags WHERE item_type = :t"), {"t": item_type})
            for item_id, tag in found:
                tags.setdefault(item_id, []).append(tag)
        writers = {
            r.item_id: r
            for r in bind.execute(
                sa.text(
                    "SELECT id, item_id, principal, client, client_version, tool FROM item_writers "
                    "WHERE item_type = :t ORDER BY id"
                ),
                {"t": item_type},
            )
        }  # the last write of each item wins
        columns = ", ".join(names)
        for row in bind.execute(sa.text(f"SELECT id, {columns}, updated_at FROM {table}")).mappings():
            fields: dict[str, Any] = {name: row[name] for name in names}
            if item_type == "custom_data":
                fields["value"] = json.loads(row["value"])
            if tagged:
                fields["tags"] = sorted(tags.get(row["id"], []), key=str.casefold)
            writer = writers.get(row["id"])
            if writer is not None:
                moved.append(writer.id)
            rows.append(
                {
                    "item_type": item_type,
                    "item_id": row["id"],
                    "fields": json.dumps(fields, ensure_ascii=False, sort_keys=True, allow_nan=False),
                    "principal": writer.principal if writer else None,
                    "client": writer.client if writer else None,
                    "client_version": writer.client_version if writer else None,
                    "tool": writer.tool if writer else None,
                    "written_at": row["updated_at"],
                }
            )
    if rows:
        bind.execute(
            sa.text(
                "INSERT INTO item_versions (item_type, item_id, version, fields, deleted, principal, client, "
                "client_version, tool, written_at) VALUES (:item_type, :item_id, 1, :fields, :deleted, :principal, "
                ":client, :client_version, :tool, :written_at)"
            ).bindparams(sa.bindparam("deleted", type_=sa.Boolean)),
            [{**r, "deleted": False} for r in rows],
        )
    if moved:
        bind.execute(sa.text("DELETE FROM item_writers WHERE id = :id"), [{"id": i} for i in moved])


def downgrade() -> None:
    op.drop_table("item_versions")
