"""The history of any item: read its versions, bring one back as a new version, purge a deleted item's.

Decisions, progress, system patterns and custom data keep their versions in `item_versions`
(`homeport.store.versions`), the two contexts in `context_history`; this module answers for all six
the same way. Restoring writes through the item module's own functions (its checks, tags, search
index, writer), so a restored version is a write like any other. A deleted item is restored under
its own id, which no other item can have taken (ids are never reused).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, select

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import citations, contexts, custom_data, decisions, patterns, progress, versions
from homeport.store._common import utc_stamp
from homeport.store.database import Store
from homeport.store.items import CONTEXT_ID, CONTEXT_TYPES, check_type
from homeport.store.schema import custom_data as custom_data_table
from homeport.store.schema import decisions as decisions_table
from homeport.store.schema import item_versions, item_writers
from homeport.store.schema import progress as progress_table
from homeport.store.schema import system_patterns as patterns_table

__all__ = ["get_item_history", "purge_item", "restore_version"]


def get_item_history(
    store: Store | None,
    item_type: str,
    item_id: int | None = None,
    *,
    limit: int = 10,
    version: int | None = None,
    before: str | None = None,
    after: str | None = None,
) -> list[dict[str, Any]]:
    """Versions of an item, newest first, each with its exact text, who wrote it and when.

    A context's versions carry `content`; another item's carry `fields` (as its get_ tool returns
    them) and `deleted` (true for the version that recorded its deletion).

    Raises:
        InvalidItemError: an unknown type, or no item_id for a type that needs one.
        ItemNotFoundError: the item has no versions, or `version` names none of them.
    """
    item_id = _item_id(item_type, item_id)
    if item_type in CONTEXT_TYPES:
        kind: contexts.ContextKind = "product" if item_type == "product_context" else "active"
        return contexts.get_history(store, kind, limit=limit, version=version, before=before, after=after)
    bounds = (
        utc_stamp(before, "before") if before is not None else None,
        utc_stamp(after, "after") if after is not None else None,
    )
    if store is None:
        raise ItemNotFoundError(f"{item_type} {item_id} has no history; the workspace has no memory yet")
    with store.read() as conn:
        found = versions.read_versions(
            conn, item_type, item_id, limit=limit, version=version, before=bounds[0], after=bounds[1]
        )
        if not found and (version is not None or not _has_history(conn, item_type, item_id)):
            what = f"no version {version}" if version is not None else "no history"
            raise ItemNotFoundError(
                f"{item_type} {item_id} has {what}; find ids with search or the get_ tools, and versions with "
                "get_item_history without version"
            )
    return found


def restore_version(store: Store, item_type: str, item_id: int | None, version: int) -> dict[str, Any]:
    """Write version `version` of an item again, as its newest version (a deleted item comes back).

    Raises:
        InvalidItemError: an unknown type, the version that recorded the deletion, or a restore the
            item's own rules refuse (a pattern name or custom data key another item now has, a parent
            that is gone or would make a cycle).
        ItemNotFoundError: the item has no such version.
    """
    item_id = _item_id(item_type, item_id)
    with store.write() as conn:
        if item_type in CONTEXT_TYPES:
            return _restore_context(conn, item_type, version)
        found = versions.read_versions(conn, item_type, item_id, version=version, limit=1)
        if not found:
            raise ItemNotFoundError(
                f"{item_type} {item_id} has no version {version}; list its versions with get_item_history"
            )
        old = found[0]
        if old["deleted"]:
            raise InvalidItemError(
                f"version {version} of {item_type} {item_id} records its deletion; restore the version before it"
            )
        item = _RESTORERS[item_type](conn, item_id, old["fields"])
        count, newest = versions.latest_versions(conn, item_type, item_id)
    return {
        "item_type": item_type,
        "item_id": item_id,
        "restored_version": version,
        "version": newest["version"] if newest else count,
        "item": item,
    }


def purge_item(store: Store, item_type: str, item_id: int) -> dict[str, Any]:
    """Remove every version (and recorded writer) of a deleted item: nothing of it is left.

    Raises:
        InvalidItemError: a context (never deleted), or an item that still exists (delete it first).
        ItemNotFoundError: the item has no history to purge.
    """
    check_type(item_type)
    if item_type in CONTEXT_TYPES:
        raise InvalidItemError(
            f"the {item_type} is never deleted, so its history cannot be purged; replace its content instead"
        )
    with store.write() as conn:
        if _exists(conn, item_type, item_id):
            raise InvalidItemError(
                f"{item_type} {item_id} still exists; only a deleted item's history is purged: delete it first "
                f"(delete_{item_type})"
            )
        c = item_versions.c
        removed = conn.execute(delete(item_versions).where(c.item_type == item_type, c.item_id == item_id)).rowcount
        if not removed:
            raise ItemNotFoundError(f"{item_type} {item_id} has no history to purge")
        w = item_writers.c
        conn.execute(delete(item_writers).where(w.item_type == item_type, w.item_id == item_id))
        citations.replace(conn, item_type, item_id, [])  # their quotes are the item's text too
    return {"purged": {"type": item_type, "id": item_id, "versions": removed}}


def _item_id(item_type: str, item_id: int | None) -> int:
    check_type(item_type)
    if item_type in CONTEXT_TYPES:
        if item_id not in (None, CONTEXT_ID):
            raise ItemNotFoundError(f"{item_type} has the single id {CONTEXT_ID}, not {item_id}")
        return CONTEXT_ID
    if item_id is None:
        raise InvalidItemError(f"pass item_id: the id of the {item_type} (find it with search or the get_ tools)")
    return item_id


def _has_history(conn: Connection, item_type: str, item_id: int) -> bool:
    return versions.latest_versions(conn, item_type, item_id)[0] > 0


def _exists(conn: Connection, item_type: str, item_id: int) -> bool:
    table = _TABLES[item_type]
    return conn.execute(select(table.c.id).where(table.c.id == item_id)).first() is not None


def _restore_context(conn: Connection, item_type: str, version: int) -> dict[str, Any]:
    kind: contexts.ContextKind = "product" if item_type == "product_context" else "active"
    found = contexts.history_in(conn, kind, version)
    if found is None:
        raise ItemNotFoundError(f"{item_type} has no version {version}; list its versions with get_item_history")
    written = contexts.write_context(conn, kind, found)
    return {
        "item_type": item_type,
        "item_id": CONTEXT_ID,
        "restored_version": version,
        "version": written["version"],
        "item": written,
    }


def _restore_decision(conn: Connection, item_id: int, f: dict[str, Any]) -> dict[str, Any]:
    text = {"rationale": f["rationale"], "implementation_details": f["implementation_details"], "tags": f["tags"]}
    if _exists(conn, "decision", item_id):
        # "" clears a field in rewrite_decision; None would keep the current text.
        cleared = {k: ("" if v is None else v) for k, v in text.items() if k != "tags"}
        return decisions.rewrite_decision(conn, item_id, summary=f["summary"], tags=f["tags"], **cleared)
    return decisions.insert_decision(conn, f["summary"], item_id=item_id, **text)


def _restore_pattern(conn: Connection, item_id: int, f: dict[str, Any]) -> dict[str, Any]:
    if _exists(conn, "system_pattern", item_id):
        return patterns.rewrite_system_pattern(
            conn, item_id, name=f["name"], description=f["description"], tags=f["tags"]
        )
    patterns.refuse_taken_name(conn, f["name"], item_id)
    return patterns.upsert_system_pattern(conn, f["name"], f["description"], tags=f["tags"], item_id=item_id)


def _restore_progress(conn: Connection, item_id: int, f: dict[str, Any]) -> dict[str, Any]:
    return progress.restore_progress(conn, item_id, f["status"], f["description"], f["parent_id"])


def _restore_custom_data(conn: Connection, item_id: int, f: dict[str, Any]) -> dict[str, Any]:
    table = custom_data_table
    holder = conn.execute(select(table.c.id).where(table.c.category == f["category"], table.c.key == f["key"])).scalar()
    if holder is not None and holder != item_id:
        raise InvalidItemError(
            f"custom data {holder} now holds category {f['category']!r} and key {f['key']!r}; delete it first, "
            "or read this version with get_item_history and store its value under another key"
        )
    return custom_data.upsert_custom_data(conn, f["category"], f["key"], f["value"], item_id=item_id)


_RESTORERS = {
    "decision": _restore_decision,
    "system_pattern": _restore_pattern,
    "progress": _restore_progress,
    "custom_data": _restore_custom_data,
}
_TABLES = {
    "decision": decisions_table,
    "progress": progress_table,
    "system_pattern": patterns_table,
    "custom_data": custom_data_table,
}
