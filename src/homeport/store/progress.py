"""Progress entries (tasks): status, description, an optional parent, forming a tree."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import search as search_index
from homeport.store import versions
from homeport.store._common import now, row_dict
from homeport.store.database import Prepared, Store
from homeport.store.fields import MAX_LABEL_CHARS, MAX_TEXT_CHARS, check_text
from homeport.store.items import forget_item
from homeport.store.schema import progress
from homeport.store.uids import assign_uid

__all__ = [
    "COMMON_STATUSES",
    "delete_progress",
    "find_cycle",
    "get_progress",
    "get_progress_tree",
    "insert_progress",
    "log_progress",
    "overwrite_progress",
    "restore_progress",
    "update_progress",
]

ITEM_TYPE = "progress"
# Statuses are free text; these are the ones agents and the CLI use by convention.
COMMON_STATUSES = ("TODO", "IN_PROGRESS", "DONE", "BLOCKED")


def log_progress(
    store: Store,
    status: str,
    description: str,
    *,
    parent_id: int | None = None,
    link: tuple[str, int, str] | None = None,
) -> dict[str, Any]:
    """Record a progress entry; with `link` (item type, id, relationship), linked to that item in the same
    write, so that a link that cannot be made leaves no entry behind.

    Raises:
        InvalidItemError: empty status or description, or a link that is not valid.
        ItemNotFoundError: `parent_id` names no entry, or `link` no item.
    """
    with store.write() as conn:
        return insert_progress_linked(conn, status, description, parent_id=parent_id, link=link)


def insert_progress_linked(
    conn: Connection,
    status: str,
    description: str,
    *,
    parent_id: int | None = None,
    link: tuple[str, int, str] | None = None,
) -> dict[str, Any]:
    """`insert_progress`, then the entry's link to `link`'s item (in the same open write transaction)."""
    from homeport.store.links import insert_link

    written = insert_progress(conn, status, description, parent_id=parent_id)
    if link is not None:
        target_type, target_id, relationship = link
        written["link"] = insert_link(conn, "progress", written["id"], target_type, target_id, relationship)
    return written


def insert_progress(
    conn: Connection,
    status: str,
    description: str,
    *,
    parent_id: int | None = None,
    item_id: int | None = None,
    created_at: str | None = None,
    updated_at: str | None = None,
) -> dict[str, Any]:
    """Insert inside an open write transaction (batch writes and imports share this)."""
    status, description = _clean(status, "status"), _clean(description, "description")
    if parent_id is not None:
        _require(conn, parent_id, "parent_id")
    created = created_at or now()
    values: dict[str, Any] = {
        "status": status,
        "description": description,
        "parent_id": parent_id,
        "created_at": created,
        "updated_at": updated_at or created,
    }
    item_id = _INSERT.insert(conn, {"id": item_id, **values})
    assign_uid(conn, "progress", item_id)
    _index(conn, item_id, status, description, values["updated_at"])
    written = {"id": item_id, **values}
    versions.record(conn, ITEM_TYPE, item_id, written)
    return written


def overwrite_progress(conn: Connection, item: dict[str, Any]) -> None:
    """Replace every field of an existing entry inside an open write transaction (imports merge with this)."""
    conn.execute(
        update(progress)
        .where(progress.c.id == item["id"])
        .values(
            status=item["status"],
            description=item["description"],
            parent_id=item.get("parent_id"),
            created_at=item["created_at"],
            updated_at=item["updated_at"],
        )
    )
    _index(conn, item["id"], item["status"], item["description"], item["updated_at"])
    versions.record(conn, ITEM_TYPE, item["id"], item)


def update_progress(
    store: Store,
    progress_id: int,
    *,
    status: str | None = None,
    description: str | None = None,
    parent_id: int | None = None,
) -> dict[str, Any]:
    """Change the given fields of an entry; `parent_id=0` moves it to the top level.

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
        changes["parent_id"] = parent_id or None
    if not changes:
        raise InvalidItemError("nothing to update; pass status, description or parent_id")
    with store.write() as conn:
        _require(conn, progress_id, "progress_id")
        if parent_id:
            _require(conn, parent_id, "parent_id")
            _refuse_cycle(conn, progress_id, parent_id)
        changes["updated_at"] = now()
        conn.execute(update(progress).where(progress.c.id == progress_id).values(**changes))
        row = conn.execute(select(progress).where(progress.c.id == progress_id)).one()
        _index(conn, progress_id, row.status, row.description, row.updated_at)
        written = row_dict(row)
        versions.record(conn, ITEM_TYPE, progress_id, written)
    return written


def restore_progress(
    conn: Connection, progress_id: int, status: str, description: str, parent_id: int | None
) -> dict[str, Any]:
    """Write these fields as the entry's newest version inside an open write transaction; a deleted
    entry comes back under its id. Its parent must still exist and not lie below it.

    Raises:
        InvalidItemError: an empty value, or a parent that would make a cycle.
        ItemNotFoundError: the parent is gone.
    """
    status, description = _clean(status, "status"), _clean(description, "description")
    if parent_id is not None:
        if conn.execute(select(progress.c.id).where(progress.c.id == parent_id)).first() is None:
            raise ItemNotFoundError(
                f"parent_id {parent_id} of that version names no progress entry now; restore the parent first, "
                f"or restore and then move it with update_progress(parent_id=0)"
            )
        _refuse_cycle(conn, progress_id, parent_id)
    if conn.execute(select(progress.c.id).where(progress.c.id == progress_id)).first() is None:
        return insert_progress(conn, status, description, parent_id=parent_id, item_id=progress_id)
    stamp = now()
    conn.execute(
        update(progress)
        .where(progress.c.id == progress_id)
        .values(status=status, description=description, parent_id=parent_id, updated_at=stamp)
    )
    row = conn.execute(select(progress).where(progress.c.id == progress_id)).one()
    _index(conn, progress_id, status, description, stamp)
    written = row_dict(row)
    versions.record(conn, ITEM_TYPE, progress_id, written)
    return written


def delete_progress(store: Store, progress_id: int, *, cascade: bool = False) -> dict[str, Any]:
    """Delete an entry; with children only when `cascade`, which deletes the whole subtree.

    Raises:
        ItemNotFoundError: no entry has that id.
        InvalidItemError: the entry has children and `cascade` is false.
    """
    with store.write() as conn:
        _require(conn, progress_id, "progress_id")
        subtree = _subtree_ids(conn, progress_id)
        if len(subtree) > 1 and not cascade:
            raise InvalidItemError(
                f"progress {progress_id} has {len(subtree) - 1} descendant(s); pass cascade=true to delete them "
                "too, or move them first with update_progress(parent_id=...)"
            )
        rows = conn.execute(select(progress).where(progress.c.id.in_(subtree))).all()
        links_removed = sum(forget_item(conn, ITEM_TYPE, i) for i in subtree)
        # Parent links cut first: the foreign key holds at each step whatever the order, even in a damaged
        # tree whose parents loop.
        conn.execute(update(progress).where(progress.c.id.in_(subtree)).values(parent_id=None))
        conn.execute(delete(progress).where(progress.c.id.in_(subtree)))
        for r in rows:
            versions.record(conn, ITEM_TYPE, r.id, row_dict(r), deleted=True)
    return {"deleted": [{"type": ITEM_TYPE, **row_dict(r)} for r in rows], "links_removed": links_removed}


def get_progress(
    store: Store | None, *, status: str | None = None, parent_id: int | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """Entries newest first, optionally by status and parent."""
    if store is None:
        return []
    stmt = _LIST
    if status is not None:
        stmt = stmt.where(progress.c.status == status.strip())
    if parent_id is not None:
        stmt = stmt.where(progress.c.parent_id == parent_id)
    with store.read() as conn:
        return [row_dict(r) for r in conn.execute(stmt, {"limit": max(1, min(limit, 1000))})]


def get_progress_tree(
    store: Store | None, *, root_id: int | None = None, status: str | None = None
) -> list[dict[str, Any]]:
    """Entries nested under `children`, oldest first; the subtree of `root_id`, or every top-level entry.

    With `status`, only matching entries are kept, with the ancestors that lead to them.

    Raises:
        ItemNotFoundError: `root_id` names no entry.
    """
    if store is None:
        if root_id is not None:
            raise ItemNotFoundError(f"progress {root_id} does not exist; the workspace has no progress yet")
        return []
    with store.read() as conn:
        if root_id is not None:
            _require(conn, root_id, "root_id")
        rows = [row_dict(r) for r in conn.execute(select(progress).order_by(progress.c.id))]
    nodes = {r["id"]: {**r, "children": []} for r in rows}
    tops: list[dict[str, Any]] = []
    looped = _looping_ids(nodes)
    for node in nodes.values():
        # An entry on a parent cycle (a damaged store) is shown at the top level: every entry appears once.
        parent = nodes.get(node["parent_id"]) if node["parent_id"] is not None and node["id"] not in looped else None
        (parent["children"] if parent else tops).append(node)
    forest = [nodes[root_id]] if root_id is not None else tops
    if status is not None:
        forest = [n for n in (_prune(node, status.strip()) for node in forest) if n is not None]
    return forest


# Built once: the unfiltered list only binds its limit.
_LIST = select(progress).order_by(progress.c.id.desc()).limit(bindparam("limit"))
# Prepared once: every log_progress runs the insert, and the check of its parent when it names one.
_INSERT = Prepared(insert(progress))
_EXISTS = Prepared(select(progress.c.id).where(progress.c.id == bindparam("id")))


def _prune(node: dict[str, Any], status: str) -> dict[str, Any] | None:
    children = [c for c in (_prune(child, status) for child in node["children"]) if c is not None]
    if node["status"] == status or children:
        return {**node, "children": children}
    return None


def _subtree_ids(conn: Connection, root_id: int) -> list[int]:
    ids, seen, frontier = [root_id], {root_id}, [root_id]
    while frontier:
        children = conn.execute(select(progress.c.id).where(progress.c.parent_id.in_(frontier))).scalars()
        frontier = [c for c in children if c not in seen]  # a damaged tree may loop: each id once
        seen.update(frontier)
        ids.extend(frontier)
    return ids


def find_cycle(conn: Connection) -> list[int] | None:
    """The ids of one loop of parent links, first id repeated at the end, or None if the entries form a forest."""
    parents: dict[int, int | None] = {i: p for i, p in conn.execute(select(progress.c.id, progress.c.parent_id))}
    done: set[int] = set()
    for start in parents:
        path: list[int] = []
        on_path: set[int] = set()
        cursor: int | None = start
        while cursor is not None and cursor not in done:
            if cursor in on_path:
                return [*path[path.index(cursor) :], cursor]
            path.append(cursor)
            on_path.add(cursor)
            cursor = parents.get(cursor)
        done.update(path)
    return None


def _looping_ids(nodes: dict[int, dict[str, Any]]) -> set[int]:
    """One id per parent loop, the one whose parent link is cut so the loop can be shown as a tree."""
    cut: set[int] = set()
    done: set[int] = set()
    for start in nodes:
        path: set[int] = set()
        cursor: int | None = start
        while cursor is not None and cursor in nodes and cursor not in done:
            if cursor in path:
                cut.add(cursor)
                break
            path.add(cursor)
            cursor = nodes[cursor]["parent_id"]
        done.update(path)
    return cut


def _clean(value: str, name: str) -> str:
    value = (value or "").strip()
    if not value:
        hint = f" (common: {', '.join(COMMON_STATUSES)})" if name == "status" else ""
        raise InvalidItemError(f"progress {name} is empty; pass a non-empty {name}{hint}")
    check_text(value, f"progress {name}", MAX_LABEL_CHARS["status"] if name == "status" else MAX_TEXT_CHARS)
    return value


def _require(conn: Connection, item_id: int, name: str) -> None:
    if _EXISTS.run(conn, {"id": item_id}).fetchone() is None:
        raise ItemNotFoundError(f"{name} {item_id} names no progress entry; list them with get_progress")


def _refuse_cycle(conn: Connection, item_id: int, parent_id: int) -> None:
    cursor: int | None = parent_id
    seen: set[int] = set()
    while cursor is not None and cursor not in seen:  # `seen`: a loop above (a damaged store) ends the walk
        if cursor == item_id:
            raise InvalidItemError(f"parent_id {parent_id} would make progress {item_id} its own ancestor")
        seen.add(cursor)
        cursor = conn.execute(select(progress.c.parent_id).where(progress.c.id == cursor)).scalar()


def _index(conn: Connection, item_id: int, status: str, description: str, updated_at: str) -> None:
    search_index.index_item(
        conn, ITEM_TYPE, item_id, title=description[:120], body=f"{description}\n{status}", updated_at=updated_at
    )
