"""What a person browsing a memory needs beyond the agents' reads: one item by id, a page of
decisions with the total, how many items of each type there are and when the memory last changed.

The dashboard reads these through the tool pipeline like every other call; agents have search,
get_context and get_linked_items for the same purposes and do not see these tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select

from homeport.errors import ItemNotFoundError
from homeport.store import branches, provenance
from homeport.store._common import load_json, row_dict
from homeport.store.database import Store
from homeport.store.items import check_type
from homeport.store.schema import contexts, custom_data, decisions, progress, system_patterns
from homeport.store.tags import filter_by_tags, tags_of

__all__ = ["decision_page", "get_item", "item_writes", "memory_overview"]

_TABLES = {
    "decision": decisions,
    "progress": progress,
    "system_pattern": system_patterns,
    "custom_data": custom_data,
}
_TAGGED = ("decision", "system_pattern")


def get_item(store: Store | None, item_type: str, item_id: int) -> dict[str, Any]:
    """Every field of one decision, progress entry, system pattern or custom data entry, with its tags.

    Raises:
        InvalidItemError: an item type without ids (the contexts have their own tools).
        ItemNotFoundError: no such item.
    """
    check_type(item_type, allowed=tuple(_TABLES))
    if store is None:
        raise ItemNotFoundError(f"{item_type} {item_id} does not exist; this workspace has no memory yet")
    table = _TABLES[item_type]
    with store.read() as conn:
        row = conn.execute(select(table).where(table.c.id == item_id)).first()
        if row is None:
            raise ItemNotFoundError(f"{item_type} {item_id} does not exist")
        item = row_dict(row)
        if item_type in _TAGGED:
            item["tags"] = tags_of(conn, item_type, [item_id]).get(item_id, [])
        writes = provenance.writes_of_items(conn, item_type, [item_id]).get(item_id, [])
    if item_type == "custom_data":
        item["value"] = load_json(item["value"])
    return {"type": item_type, **item, "writes": writes}


def item_writes(store: Store | None, item_type: str, item_ids: Sequence[int]) -> dict[str, list[dict[str, Any]]]:
    """Every recorded write of each listed item (who and when, oldest first), keyed by the id as text."""
    check_type(item_type, allowed=tuple(_TABLES))
    if store is None:
        return {}
    with store.read() as conn:
        found = provenance.writes_of_items(conn, item_type, item_ids)
    return {str(k): v for k, v in found.items()}


def decision_page(store: Store | None, *, offset: int = 0, limit: int = 50, tag: str | None = None) -> dict[str, Any]:
    """Decisions newest first from `offset`, at most `limit`, optionally with one tag; and how many match."""
    if store is None:
        return {"total": 0, "offset": offset, "decisions": []}
    listed = select(decisions.c.id, decisions.c.summary, decisions.c.created_at, decisions.c.updated_at)
    counted = select(func.count()).select_from(decisions)
    if tag:
        listed = filter_by_tags(listed, decisions.c.id, "decision", tags_any=[tag], tags_all=None)
        counted = filter_by_tags(counted, decisions.c.id, "decision", tags_any=[tag], tags_all=None)
    with store.read() as conn:
        hidden = branches.hidden(store, conn, "decision")  # written on a branch the reader is not on
        if hidden:
            listed = listed.where(decisions.c.id.not_in(list(hidden)))
            counted = counted.where(decisions.c.id.not_in(list(hidden)))
            branches.note_matching(conn, "decision", decisions.c.id, hidden, [tag] if tag else None, None)
        total = conn.execute(counted).scalar_one()
        rows = [row_dict(r) for r in conn.execute(listed.order_by(decisions.c.id.desc()).offset(offset).limit(limit))]
        tags = tags_of(conn, "decision", [r["id"] for r in rows])
    return {"total": total, "offset": offset, "decisions": [{**r, "tags": tags.get(r["id"], [])} for r in rows]}


def memory_overview(store: Store | None) -> dict[str, Any]:
    """How many items of each type the memory holds, and the time of its last change (None: never written)."""
    counts = dict.fromkeys(("decision", "progress", "system_pattern", "custom_data"), 0)
    if store is None:
        return {"counts": counts, "last_activity": None}
    last: list[str] = []
    with store.read() as conn:
        for item_type, table in _TABLES.items():
            count, latest = conn.execute(select(func.count(), func.max(table.c.updated_at))).one()
            counts[item_type] = count
            if latest:
                last.append(latest)
        latest_context = conn.execute(select(func.max(contexts.c.updated_at))).scalar()
    if latest_context:
        last.append(latest_context)
    return {"counts": counts, "last_activity": max(last) if last else None}
