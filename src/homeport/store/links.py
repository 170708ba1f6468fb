"""Typed links between any two items, and walks over the graph they make."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, insert, or_, select

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import blocking, provenance
from homeport.store._common import now, row_dict
from homeport.store.database import Store, insert_row
from homeport.store.fields import MAX_LABEL_CHARS, MAX_TEXT_CHARS, check_text
from homeport.store.items import require_item
from homeport.store.schema import links

__all__ = ["get_linked_items", "insert_link", "link_items"]

MAX_DEPTH = 3


def link_items(
    store: Store,
    source_type: str,
    source_id: int,
    target_type: str,
    target_id: int,
    relationship: str,
    *,
    description: str | None = None,
) -> dict[str, Any]:
    """Link two existing items; linking the same pair with the same relationship again returns the first link.

    Raises:
        InvalidItemError: an unknown type, an empty relationship, or an item linked to itself.
        ItemNotFoundError: either end does not exist.
    """
    with store.write() as conn:
        return insert_link(conn, source_type, source_id, target_type, target_id, relationship, description=description)


def insert_link(
    conn: Connection,
    source_type: str,
    source_id: int,
    target_type: str,
    target_id: int,
    relationship: str,
    *,
    description: str | None = None,
    created_at: str | None = None,
) -> dict[str, Any]:
    relationship = (relationship or "").strip()
    if not relationship:
        raise InvalidItemError("relationship is empty; name it, e.g. implements, depends_on, relates_to")
    check_text(relationship, "relationship", MAX_LABEL_CHARS["relationship"])
    check_text(description, "link description", MAX_TEXT_CHARS)
    if (source_type, source_id) == (target_type, target_id):
        raise InvalidItemError(f"{source_type} {source_id} cannot be linked to itself")
    require_item(conn, source_type, source_id)
    require_item(conn, target_type, target_id)
    # blocks/blocked_by between progress entries: one direction stored, cycles refused (`blocking`)
    (source_type, source_id), (target_type, target_id), relationship = blocking.dependency_edge(
        conn, (source_type, source_id), (target_type, target_id), relationship
    )
    edge = {
        "source_type": source_type,
        "source_id": source_id,
        "target_type": target_type,
        "target_id": target_id,
        "relationship": relationship,
    }
    existing = conn.execute(select(links).filter_by(**edge)).first()
    if existing is not None:
        return {**row_dict(existing), "created": False}
    values: dict[str, Any] = {**edge, "description": description, "created_at": created_at or now()}
    link_id = insert_row(conn, insert(links).values(**values))
    provenance.note(conn, "link", link_id)
    return {"id": link_id, **values, "created": True}


def get_linked_items(
    store: Store | None,
    item_type: str,
    item_id: int,
    *,
    relationship: str | None = None,
    linked_type: str | None = None,
    depth: int = 1,
) -> list[dict[str, Any]]:
    """Items linked to the given one in either direction, up to `depth` hops (1-3), nearest first.

    Each entry: `{type, id, relationship, direction, depth, via}` where direction is "outgoing"
    when the link points from the nearer item to this one's neighbour. `relationship="blocked_by"`
    on a progress entry is the reverse view of `blocks`: the entries that block it (one hop).

    Raises:
        InvalidItemError: depth outside 1-3.
        ItemNotFoundError: the start item does not exist.
    """
    if not 1 <= depth <= MAX_DEPTH:
        raise InvalidItemError(f"depth {depth} is out of range; use 1 to {MAX_DEPTH}")
    if store is None:
        raise ItemNotFoundError(f"{item_type} {item_id} does not exist; this workspace has no memory yet")
    with store.read() as conn:
        require_item(conn, item_type, item_id)
        if item_type == blocking.ITEM_TYPE and (relationship or "").strip() == blocking.BLOCKED_BY:
            blockers = blocking.blockers_of(conn, item_id)
            return [b for b in blockers if linked_type is None or b["type"] == linked_type]
        start = (item_type, item_id)
        seen = {start}
        frontier = [start]
        found: list[dict[str, Any]] = []
        for hop in range(1, depth + 1):
            next_frontier = []
            for node in frontier:
                for edge in _edges(conn, node, relationship):
                    neighbour, direction = _other_end(edge, node)
                    if neighbour in seen:
                        continue
                    seen.add(neighbour)
                    next_frontier.append(neighbour)
                    if linked_type is None or neighbour[0] == linked_type:
                        found.append(
                            {
                                "type": neighbour[0],
                                "id": neighbour[1],
                                "relationship": edge.relationship,
                                "direction": direction,
                                "depth": hop,
                                "link_id": edge.id,
                                "via": {"type": node[0], "id": node[1]},
                                "description": edge.description,
                            }
                        )
            frontier = next_frontier
    return found


def _edges(conn: Connection, node: tuple[str, int], relationship: str | None) -> list[Any]:
    item_type, item_id = node
    stmt = (
        select(links)
        .where(
            or_(
                (links.c.source_type == item_type) & (links.c.source_id == item_id),
                (links.c.target_type == item_type) & (links.c.target_id == item_id),
            )
        )
        .order_by(links.c.id)
    )
    if relationship is not None:
        stmt = stmt.where(links.c.relationship == relationship.strip())
    return list(conn.execute(stmt).all())


def _other_end(edge: Any, node: tuple[str, int]) -> tuple[tuple[str, int], str]:
    if (edge.source_type, edge.source_id) == node:
        return (edge.target_type, edge.target_id), "outgoing"
    return (edge.source_type, edge.source_id), "incoming"
