"""Progress entries (tasks): status, description, an optional parent."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, insert, select, update

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import search as search_index
from homeport.store._common import now
from homeport.store.database import Store
from homeport.store.schema import progress

__all__ = ["COMMON_STATUSES", "get_progress", "log_progress", "update_progress"]

ITEM_TYPE = "progress"
COMMON_STATUSES = ("TODO", "IN_PROGRESS", "DONE", "BLOCKED")


def log_progress(store: Store, status: str, description: str, *, parent_id: int | None = None) -> dict[str, Any]:
    """Record a progress entry.

    Raises:
        InvalidItemError: empty status or description.
        ItemNotFoundError: `parent_id` names no entry.
    """
    status, description = _clean(status, "status"), _clean(description, "description")
    stamp = now()
    with store.write() as conn:
        if parent_id is not None:
            _require(conn, parent_id, "parent_id")
        item_id = conn.execute(insert(progress).values(
            status=status, description=description, parent_id=parent_id, created_at=stamp, updated_at=stamp,
        )).inserted_primary_key[0]
        _index(conn, item_id, status, description)
    return {"id": item_id, "status": status, "description": description, "parent_id": parent_id,
            "created_at": stamp, "updated_at": stamp}


def update_progress(store: Store, progress_id: int, *, status: str | None = None, description: str | None = None,
                    parent_id: int | None = None) -> dict[str, Any]:
    """Change the given fields of an entry.

    Raises:
        InvalidItemError: nothing to change, an empty value, or a parent that would make a cycle.
        ItemNotFoundError: `progress_id` or `parent_id` names no entry.
    """
    changes: dict[str, Any] = {}
    if status is not None:
        changes["status"] = _clean(status, "status")
    if description is not None:
        changes["description"] = _clean(description, "description")
    if parent_id is not None:
        changes["parent_id"] = parent_id
    if not changes:
        raise InvalidItemError("nothing to update; pass status, description or parent_id")
    with store.write() as conn:
        _require(conn, progress_id, "progress_id")
        if parent_id is not None:
            _require(conn, parent_id, "parent_id")
            _refuse_cycle(conn, progress_id, parent_id)
        changes["updated_at"] = now()
        conn.execute(update(progress).where(progress.c.id == progress_id).values(**changes))
        row = conn.execute(select(progress).where(progress.c.id == progress_id)).one()
        _index(conn, progress_id, row.status, row.description)
    return row._asdict()


def get_progress(store: Store | None, *, status: str | None = None, parent_id: int | None = None,
                 limit: int = 50) -> list[dict[str, Any]]:
    """Entries newest first, optionally by status and parent."""
    if store is None:
        return []
    stmt = select(progress).order_by(progress.c.id.desc()).limit(max(1, min(limit, 1000)))
    if status is not None:
        stmt = stmt.where(progress.c.status == status.strip())
    if parent_id is not None:
        stmt = stmt.where(progress.c.parent_id == parent_id)
    with store.read() as conn:
        return [r._asdict() for r in conn.execute(stmt)]


def _clean(value: str, name: str) -> str:
    value = value.strip()
    if not value:
        hint = f" (common: {', '.join(COMMON_STATUSES)})" if name == "status" else ""
        raise InvalidItemError(f"progress {name} is empty; pass a non-empty {name}{hint}")
    return value


def _require(conn: Connection, item_id: int, name: str) -> None:
    if conn.execute(select(progress.c.id).where(progress.c.id == item_id)).first() is None:
        raise ItemNotFoundError(f"{name} {item_id} names no progress entry; list them with get_progress")


def _refuse_cycle(conn: Connection, item_id: int, parent_id: int) -> None:
    cursor: int | None = parent_id
    while cursor is not None:
        if cursor == item_id:
            raise InvalidItemError(f"parent_id {parent_id} would make progress {item_id} its own ancestor")
        cursor = conn.execute(select(progress.c.parent_id).where(progress.c.id == cursor)).scalar()


def _index(conn: Connection, item_id: int, status: str, description: str) -> None:
    search_index.index_item(conn, ITEM_TYPE, item_id, title=description[:120], body=f"{description}\n{status}")
