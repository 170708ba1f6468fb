"""Blocking dependencies between progress entries, and the work that is ready now (beads' `ready`).

A `blocks` link from progress A to progress B says B cannot start until A is done. `blocked_by` is
the same link seen from B: written, it is stored as the reverse `blocks` link, so there is one edge
per dependency and one place to look. Between two progress entries the links must stay acyclic (a
cycle would leave every entry on it waiting forever): a link that would close one is refused with
the cycle named. Between other item types both words stay ordinary relationships.

Progress entries have no priority field: ready work is ordered by status (IN_PROGRESS, then TODO,
then any other status, BLOCKED last), then oldest first.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, select

from homeport.errors import InvalidItemError
from homeport.store.database import Store
from homeport.store.schema import links, progress

__all__ = ["BLOCKED_BY", "BLOCKS", "READY_ORDER", "blockers_of", "dependency_edge", "ready_work"]

BLOCKS = "blocks"
BLOCKED_BY = "blocked_by"
ITEM_TYPE = "progress"
# A blocker with one of these statuses (any case) no longer blocks.
DONE_STATUSES = frozenset({"DONE"})
_STATUS_RANK = {"IN_PROGRESS": 0, "TODO": 1, "BLOCKED": 3}
READY_ORDER = (
    "progress entries have no priority field: by status (IN_PROGRESS, TODO, other statuses, BLOCKED), then oldest first"
)


def dependency_edge(
    conn: Connection, source: tuple[str, int], target: tuple[str, int], relationship: str
) -> tuple[tuple[str, int], tuple[str, int], str]:
    """The edge to store for a link: `blocked_by` between progress entries turned into the reverse
    `blocks`, after refusing a `blocks` link that would close a cycle. Other links come back as given.

    Raises:
        InvalidItemError: the link would close a cycle of `blocks` links (the cycle is named).
    """
    if relationship not in (BLOCKS, BLOCKED_BY) or source[0] != ITEM_TYPE or target[0] != ITEM_TYPE:
        return source, target, relationship
    if relationship == BLOCKED_BY:
        source, target = target, source
    path = _blocking_path(conn, target[1], source[1])
    if path is not None:
        chain = " blocks ".join(f"progress {i}" for i in [source[1], *path])
        raise InvalidItemError(
            f"progress {source[1]} blocks progress {target[1]} would close a cycle: {chain}; nothing in a cycle "
            "could ever become ready. Leave this link out, or mark one entry on the cycle DONE first"
        )
    return source, target, BLOCKS


def _blocking_path(conn: Connection, start: int, goal: int) -> list[int] | None:
    """The ids from `start` to `goal` along `blocks` links (both ends included), or None."""
    if start == goal:
        return [start]
    edges = _blocks_edges(conn)
    came_from: dict[int, int] = {}
    frontier, seen = [start], {start}
    while frontier:
        following = []
        for node in frontier:
            for nxt in edges.get(node, ()):
                if nxt in seen:
                    continue
                seen.add(nxt)
                came_from[nxt] = node
                if nxt == goal:
                    path = [goal]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                following.append(nxt)
        frontier = following
    return None


def _blocks_edges(conn: Connection) -> dict[int, list[int]]:
    stmt = (
        select(links.c.source_id, links.c.target_id)
        .where(links.c.relationship == BLOCKS)
        .where(links.c.source_type == ITEM_TYPE)
        .where(links.c.target_type == ITEM_TYPE)
        .order_by(links.c.id)
    )
    edges: dict[int, list[int]] = defaultdict(list)
    for source_id, target_id in conn.execute(stmt):
        edges[source_id].append(target_id)
    return edges


def blockers_of(conn: Connection, progress_id: int) -> list[dict[str, Any]]:
    """The `blocked_by` view of a progress entry: the entries that block it, in link order."""
    stmt = (
        select(links.c.id, links.c.source_id, links.c.description)
        .where(links.c.relationship == BLOCKS)
        .where(links.c.source_type == ITEM_TYPE)
        .where(links.c.target_type == ITEM_TYPE)
        .where(links.c.target_id == progress_id)
        .order_by(links.c.id)
    )
    return [
        {
            "type": ITEM_TYPE,
            "id": row.source_id,
            "relationship": BLOCKED_BY,
            "direction": "incoming",
            "depth": 1,
            "link_id": row.id,
            "via": {"type": ITEM_TYPE, "id": progress_id},
            "description": row.description,
        }
        for row in conn.execute(stmt)
    ]


def _is_done(status: str) -> bool:
    return status.strip().upper() in DONE_STATUSES


def ready_work(store: Store | None, *, limit: int = 50) -> dict[str, Any]:
    """Open progress entries (status not DONE) none of whose blockers is open, in `READY_ORDER`.

    `{items: [entry + ready_because], blocked: [{id, blocked_by: [{id, status}]}], order}`.
    """
    if store is None:
        return {"items": [], "blocked": [], "order": READY_ORDER}
    with store.read() as conn:
        entries = {r.id: r for r in conn.execute(select(progress).order_by(progress.c.id))}
        edges = _blocks_edges(conn)
    blockers: dict[int, list[int]] = defaultdict(list)
    for source_id, targets in edges.items():
        for target_id in targets:
            if source_id in entries:
                blockers[target_id].append(source_id)
    ready: list[tuple[tuple[int, str, int], dict[str, Any]]] = []
    blocked: list[dict[str, Any]] = []
    for entry in entries.values():
        if _is_done(entry.status):
            continue
        mine = blockers.get(entry.id, [])
        still_open = [b for b in mine if not _is_done(entries[b].status)]
        if still_open:
            blocked.append({"id": entry.id, "blocked_by": [{"id": b, "status": entries[b].status} for b in still_open]})
            continue
        if mine:
            why = "every blocker is done: " + ", ".join(f"progress {b} ({entries[b].status})" for b in mine)
        else:
            why = "no blockers"
        if entry.status.strip().upper() == "BLOCKED":
            why += "; its status says BLOCKED, but no open item blocks it"
        rank = _STATUS_RANK.get(entry.status.strip().upper(), 2)
        item = {
            "id": entry.id,
            "status": entry.status,
            "description": entry.description,
            "parent_id": entry.parent_id,
            "created_at": entry.created_at,
            "updated_at": entry.updated_at,
            "ready_because": why,
        }
        ready.append(((rank, entry.created_at, entry.id), item))
    ready.sort(key=lambda pair: pair[0])
    return {"items": [item for _, item in ready[: max(1, limit)]], "blocked": blocked, "order": READY_ORDER}
