"""System patterns: named, reusable ways the project does things; the name is unique per workspace."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import branches, versions
from homeport.store import search as search_index
from homeport.store._common import now, row_dict
from homeport.store.database import Store, insert_row
from homeport.store.fields import MAX_LABEL_CHARS, MAX_TEXT_CHARS, check_text
from homeport.store.items import forget_item
from homeport.store.schema import system_patterns
from homeport.store.tags import filter_by_tags, set_tags, split_tags, tag_list_column, tags_of
from homeport.store.uids import assign_uid

__all__ = [
    "checked_pattern",
    "delete_system_pattern",
    "get_system_patterns",
    "log_system_pattern",
    "refuse_taken_name",
    "rewrite_system_pattern",
    "update_system_pattern",
    "upsert_system_pattern",
]

ITEM_TYPE = "system_pattern"


def log_system_pattern(
    store: Store, name: str, description: str, *, tags: Sequence[str] | None = None
) -> dict[str, Any]:
    """Create a pattern, or update the one with the same name (case-insensitive); tags=None keeps its tags.

    Raises:
        InvalidItemError: empty name or description.
    """
    with store.write() as conn:
        return upsert_system_pattern(conn, name, description, tags=tags)


def checked_pattern(name: str | None, description: str | None) -> tuple[str, str]:
    """The pattern's name and description, stripped, once they pass the limits (upserts and copies share this).

    Raises:
        InvalidItemError, ValueTooLargeError: an empty field, or one over its limit.
    """
    name, description = (name or "").strip(), (description or "").strip()
    if not name or not description:
        raise InvalidItemError("a system pattern needs a non-empty name and description")
    check_text(name, "system pattern name", MAX_LABEL_CHARS["name"])
    check_text(description, "system pattern description", MAX_TEXT_CHARS)
    return name, description


def upsert_system_pattern(
    conn: Connection,
    name: str,
    description: str,
    *,
    tags: Sequence[str] | None = None,
    item_id: int | None = None,
    created_at: str | None = None,
    updated_at: str | None = None,
) -> dict[str, Any]:
    name, description = checked_pattern(name, description)
    stamp = updated_at or now()
    existing = conn.execute(
        select(system_patterns.c.id, system_patterns.c.created_at).where(system_patterns.c.name_key == name.casefold())
    ).first()
    if existing is None:
        created = created_at or stamp
        values: dict[str, Any] = {
            "name": name,
            "name_key": name.casefold(),
            "description": description,
            "created_at": created,
            "updated_at": stamp,
        }
        if item_id is not None:
            values["id"] = item_id
        item_id = insert_row(conn, insert(system_patterns).values(**values))
        assign_uid(conn, ITEM_TYPE, item_id)
        branches.scope_new_item(conn, ITEM_TYPE, item_id)
    else:
        item_id, created = existing
        conn.execute(
            update(system_patterns)
            .where(system_patterns.c.id == item_id)
            .values(name=name, description=description, updated_at=stamp)
        )
    if tags is not None or existing is None:
        clean = set_tags(conn, ITEM_TYPE, item_id, tags or ())
    else:  # re-logging a name without tags keeps the tags it has
        clean = tags_of(conn, ITEM_TYPE, [item_id]).get(item_id, [])
    search_index.index_item(conn, ITEM_TYPE, item_id, title=name, body=description, updated_at=stamp, tags=clean)
    written = {
        "id": item_id,
        "name": name,
        "description": description,
        "tags": clean,
        "created_at": created,
        "updated_at": stamp,
        "updated": existing is not None,
    }
    versions.record(conn, ITEM_TYPE, item_id, written)
    return written


def get_system_patterns(
    store: Store | None,
    *,
    tags_any: Sequence[str] | None = None,
    tags_all: Sequence[str] | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """Patterns ordered by name."""
    if store is None:
        return []
    stmt = (
        select(system_patterns, tag_list_column(ITEM_TYPE, system_patterns.c.id))
        .order_by(system_patterns.c.name_key)
        .limit(max(1, min(limit, 1000)))
    )
    stmt = filter_by_tags(stmt, system_patterns.c.id, ITEM_TYPE, tags_any=tags_any, tags_all=tags_all)
    with store.read() as conn:
        hidden = branches.hidden(store, conn, ITEM_TYPE)  # written on a branch the reader is not on
        if hidden:
            stmt = stmt.where(system_patterns.c.id.not_in(list(hidden)))
            branches.note_matching(conn, ITEM_TYPE, system_patterns.c.id, hidden, tags_any, tags_all)
        rows = [row_dict(r) for r in conn.execute(stmt)]
    return [_public(r, split_tags(r.pop("tag_list"))) for r in rows]


def delete_system_pattern(store: Store, pattern_id: int) -> dict[str, Any]:
    """Delete a pattern with its tags and links; returns what was removed.

    Raises:
        ItemNotFoundError: no pattern has that id.
    """
    with store.write() as conn:
        row = conn.execute(select(system_patterns).where(system_patterns.c.id == pattern_id)).first()
        if row is None:
            raise ItemNotFoundError(f"system pattern {pattern_id} does not exist; list them with get_system_patterns")
        tags = tags_of(conn, ITEM_TYPE, [pattern_id]).get(pattern_id, [])
        links_removed = forget_item(conn, ITEM_TYPE, pattern_id)
        conn.execute(delete(system_patterns).where(system_patterns.c.id == pattern_id))
        versions.record(conn, ITEM_TYPE, pattern_id, {**row_dict(row), "tags": tags}, deleted=True)
    return {"deleted": {"type": ITEM_TYPE, **_public(row_dict(row), tags)}, "links_removed": links_removed}


def update_system_pattern(
    store: Store,
    pattern_id: int,
    *,
    name: str | None = None,
    description: str | None = None,
    tags: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Correct a pattern by id: the fields given replace the stored ones (a new name too, if no other
    pattern has it); the earlier text stays as a version. Returns the pattern.

    Raises:
        InvalidItemError: nothing to change, an empty field, or a name another pattern has.
        ItemNotFoundError: no pattern has that id.
    """
    if name is None and description is None and tags is None:
        raise InvalidItemError("nothing to update; pass name, description or tags")
    with store.write() as conn:
        return rewrite_system_pattern(conn, pattern_id, name=name, description=description, tags=tags)


def rewrite_system_pattern(
    conn: Connection,
    pattern_id: int,
    *,
    name: str | None = None,
    description: str | None = None,
    tags: Sequence[str] | None = None,
) -> dict[str, Any]:
    """`update_system_pattern` inside an open write transaction (a restored version is written with this)."""
    row = conn.execute(select(system_patterns).where(system_patterns.c.id == pattern_id)).first()
    if row is None:
        raise ItemNotFoundError(f"system pattern {pattern_id} does not exist; list them with get_system_patterns")
    name, description = checked_pattern(
        row.name if name is None else name, row.description if description is None else description
    )
    refuse_taken_name(conn, name, pattern_id)
    stamp = now()
    conn.execute(
        update(system_patterns)
        .where(system_patterns.c.id == pattern_id)
        .values(name=name, name_key=name.casefold(), description=description, updated_at=stamp)
    )
    if tags is None:
        clean = tags_of(conn, ITEM_TYPE, [pattern_id]).get(pattern_id, [])
    else:
        clean = set_tags(conn, ITEM_TYPE, pattern_id, tags)
    search_index.index_item(conn, ITEM_TYPE, pattern_id, title=name, body=description, updated_at=stamp, tags=clean)
    written = {
        "id": pattern_id,
        "name": name,
        "description": description,
        "tags": clean,
        "created_at": row.created_at,
        "updated_at": stamp,
    }
    versions.record(conn, ITEM_TYPE, pattern_id, written)
    return written


def refuse_taken_name(conn: Connection, name: str, pattern_id: int) -> None:
    """Raises: InvalidItemError when a pattern other than `pattern_id` already has `name` (any case)."""
    other = conn.execute(
        select(system_patterns.c.id).where(
            system_patterns.c.name_key == name.casefold(), system_patterns.c.id != pattern_id
        )
    ).scalar()
    if other is not None:
        raise InvalidItemError(
            f"system pattern {other} is already named {name!r} (names are unique, any case); choose another "
            f"name, or delete pattern {other} first"
        )


def _public(row: dict[str, Any], tags: list[str]) -> dict[str, Any]:
    row.pop("name_key", None)
    return {**row, "tags": tags}
