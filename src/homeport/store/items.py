"""The item types of the memory, and what is shared by all of them: existence and removal."""

from __future__ import annotations

from sqlalchemy import Connection, Table, delete, or_, select

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import branches
from homeport.store import search as search_index
from homeport.store._common import ITEM_TYPES
from homeport.store.schema import contexts, custom_data, decisions, item_tags, links, progress, system_patterns
from homeport.store.uids import forget_uid

__all__ = ["CONTEXT_ID", "CONTEXT_TYPES", "ITEM_TYPES", "check_type", "forget_item", "require_item"]

# The two context documents are single items; links and search address them with id 1.
CONTEXT_ID = 1
CONTEXT_TYPES = ("product_context", "active_context")
_TABLES: dict[str, Table] = {
    "decision": decisions,
    "progress": progress,
    "system_pattern": system_patterns,
    "custom_data": custom_data,
}


def check_type(item_type: str, *, allowed: tuple[str, ...] = ITEM_TYPES) -> str:
    """Raises: InvalidItemError naming the unknown type and the known ones."""
    if item_type not in allowed:
        raise InvalidItemError(f"unknown item type {item_type!r}; use one of {', '.join(allowed)}")
    return item_type


def require_item(conn: Connection, item_type: str, item_id: int) -> None:
    """Raises: InvalidItemError for an unknown type, ItemNotFoundError for a missing item."""
    check_type(item_type)
    if item_type in CONTEXT_TYPES:
        if item_id != CONTEXT_ID:
            raise ItemNotFoundError(f"{item_type} has the single id {CONTEXT_ID}, not {item_id}")
        kind = item_type.removesuffix("_context")
        if conn.execute(select(contexts.c.kind).where(contexts.c.kind == kind)).first() is None:
            raise ItemNotFoundError(f"the {item_type} is empty; write it with update_{item_type} first")
        return
    table = _TABLES[item_type]
    if conn.execute(select(table.c.id).where(table.c.id == item_id)).first() is None:
        raise ItemNotFoundError(f"{item_type} {item_id} does not exist; find ids with search or the get_ tools")


def forget_item(conn: Connection, item_type: str, item_id: int) -> int:
    """Remove an item's tags, links and index entry; returns how many links went with it."""
    conn.execute(delete(item_tags).where(item_tags.c.item_type == item_type, item_tags.c.item_id == item_id))
    removed = conn.execute(
        delete(links).where(
            or_(
                (links.c.source_type == item_type) & (links.c.source_id == item_id),
                (links.c.target_type == item_type) & (links.c.target_id == item_id),
            )
        )
    ).rowcount
    search_index.unindex_item(conn, item_type, item_id)
    forget_uid(conn, item_type, item_id)
    branches.forget(conn, item_type, item_id)
    return removed
