"""Every version of every item: the fields each write left, who made it and when (table `item_versions`).

The item modules call `record` inside the write's own transaction, after the item's row is written:
one INSERT that numbers the version itself (the item's highest version + 1), with no round trip to
read the number first. Writers of a workspace are serialised (SQLite's write lock, PostgreSQL's
advisory lock taken with BEGIN) and the item's row was written first, so two writes never compute
the same number. The version row also names the writer (`provenance.current_writer`), so these item
types no longer add a row to `item_writers` as well: a write costs the statement it cost before
(`provenance.writes_of_items` reads both tables).

A delete records a version with `deleted` true holding the fields as they were: the history outlives
the item, and `restore_version` can bring it back, until `purge_item` removes it
(`homeport.store.item_history`). The contexts keep their versions in `context_history`.

Fields, per item type (the values a `get_` tool returns, tags sorted as it gives them):

    decision        summary, rationale, implementation_details, tags
    progress        status, description, parent_id
    system_pattern  name, description, tags
    custom_data     category, key, value (the JSON value itself)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Boolean, Connection, Integer, String, Text, bindparam, func, insert, select

from homeport.store import branches
from homeport.store._common import dump_json, load_json, now
from homeport.store.database import Prepared
from homeport.store.provenance import current_writer
from homeport.store.schema import item_versions

__all__ = ["VERSIONED_TYPES", "fields_of", "latest_versions", "read_versions", "record", "record_many"]

VERSIONED_TYPES = ("decision", "progress", "system_pattern", "custom_data")
_FIELDS = {
    "decision": ("summary", "rationale", "implementation_details", "tags"),
    "progress": ("status", "description", "parent_id"),
    "system_pattern": ("name", "description", "tags"),
    "custom_data": ("category", "key", "value"),
}


def fields_of(item_type: str, item: dict[str, Any]) -> dict[str, Any]:
    """The versioned fields of an item as a `get_` tool returns it (tags in the order tags_of gives)."""
    out = {name: item.get(name) for name in _FIELDS[item_type]}
    if "tags" in out:
        out["tags"] = sorted(out["tags"] or (), key=str.casefold)
    return out


def record(conn: Connection, item_type: str, item_id: int, item: dict[str, Any], *, deleted: bool = False) -> None:
    """Add the next version of an item (its fields taken from `item`), inside the write's transaction."""
    writer = current_writer()
    _RECORD.run(
        conn,
        {
            "item_type": item_type,
            "item_id": item_id,
            "fields": dump_json(fields_of(item_type, item)),
            "deleted": deleted,
            "principal": writer.principal if writer else None,
            "client": writer.client if writer else None,
            "client_version": writer.client_version if writer else None,
            "tool": writer.tool if writer else None,
            "written_at": now(),
            **branches.place_columns(),
        },
    )


def record_many(conn: Connection, item_type: str, items: Sequence[dict[str, Any]]) -> None:
    """Version 1 of many new items at once (one executemany): a bulk copy into an empty store."""
    if not items:
        return
    writer = current_writer()
    stamp = now()
    who = {
        "principal": writer.principal if writer else None,
        "client": writer.client if writer else None,
        "client_version": writer.client_version if writer else None,
        "tool": writer.tool if writer else None,
        **branches.place_columns(),
    }
    rows = [
        {
            "item_type": item_type,
            "item_id": item["id"],
            "version": 1,
            "fields": dump_json(fields_of(item_type, item)),
            "deleted": False,
            **who,
            "written_at": stamp,
        }
        for item in items
    ]
    conn.execute(insert(item_versions), rows)


def read_versions(
    conn: Connection,
    item_type: str,
    item_id: int,
    *,
    limit: int = 10,
    version: int | None = None,
    before: str | None = None,
    after: str | None = None,
) -> list[dict[str, Any]]:
    """Versions of one item, newest first, each with its fields, `deleted`, `changed_at` and `written_by`."""
    c = item_versions.c
    stmt = select(item_versions).where(c.item_type == item_type, c.item_id == item_id).order_by(c.version.desc())
    if version is not None:
        stmt = stmt.where(c.version == version)
    if before is not None:
        stmt = stmt.where(c.written_at < before)
    if after is not None:
        stmt = stmt.where(c.written_at > after)
    return [_public(r) for r in conn.execute(stmt.limit(max(1, min(limit, 1000))))]


def latest_versions(conn: Connection, item_type: str, item_id: int) -> tuple[int, dict[str, Any] | None]:
    """(how many versions the item has, its newest one or None)."""
    c = item_versions.c
    count = conn.execute(
        select(func.count()).select_from(item_versions).where(c.item_type == item_type, c.item_id == item_id)
    ).scalar_one()
    newest = read_versions(conn, item_type, item_id, limit=1)
    return int(count), newest[0] if newest else None


def _public(row: Any) -> dict[str, Any]:
    writer = None
    if row.principal is not None:
        writer = {
            "principal": row.principal,
            "client": row.client,
            "client_version": row.client_version,
            "tool": row.tool,
        }
    return {
        "version": row.version,
        "fields": load_json(row.fields),
        "deleted": bool(row.deleted),
        "changed_at": row.written_at,
        "written_by": writer,
        # Where it was written (revision 0010): None outside a git work tree and before 0010.
        "made_in": (
            None
            if row.worktree is None
            else {"branch": row.branch, "commit": row.head_commit, "worktree": row.worktree}
        ),
    }


# Prepared once: every write of an item runs it. The version is numbered in the statement itself (a
# scalar subquery in VALUES: SQLite runs INSERT ... SELECT from the same table through a temporary table).
_c = item_versions.c
_RECORD = Prepared(
    insert(item_versions)
    .inline()  # no RETURNING of the numbered key
    .values(
        item_type=bindparam("item_type", type_=String),
        item_id=bindparam("item_id", type_=Integer),
        version=select(func.coalesce(func.max(_c.version), 0) + 1)
        .where(_c.item_type == bindparam("item_type"), _c.item_id == bindparam("item_id"))
        .scalar_subquery(),
        fields=bindparam("fields", type_=Text),
        deleted=bindparam("deleted", type_=Boolean),
        principal=bindparam("principal", type_=String),
        client=bindparam("client", type_=String),
        client_version=bindparam("client_version", type_=String),
        tool=bindparam("tool", type_=String),
        written_at=bindparam("written_at", type_=String),
        branch=bindparam("branch", type_=String),
        head_commit=bindparam("head_commit", type_=String),
        worktree=bindparam("worktree", type_=Text),
    )
)
