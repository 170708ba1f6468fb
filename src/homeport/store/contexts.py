"""Product context and active context: JSON documents with full replace or key patches, versioned."""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import Connection, bindparam, insert, select, update

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import provenance
from homeport.store import search as search_index
from homeport.store._common import dump_json, load_json, now, utc_stamp
from homeport.store.database import Store
from homeport.store.fields import check_json
from homeport.store.schema import context_history, contexts

__all__ = [
    "DELETE_MARKER",
    "ContextKind",
    "apply_patch",
    "get_context",
    "get_history",
    "history_in",
    "update_context",
    "write_context",
]

ContextKind = Literal["product", "active"]
DELETE_MARKER = "__DELETE__"


def apply_patch(document: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Top-level merge: each key of `patch` replaces the document's; the value "__DELETE__" removes it."""
    merged = dict(document)
    for key, value in patch.items():
        if value == DELETE_MARKER:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def get_context(store: Store | None, kind: ContextKind) -> dict[str, Any]:
    if store is None:
        return {"content": {}, "version": 0, "updated_at": None}
    with store.read() as conn:
        return _read(conn, kind)


def update_context(
    store: Store,
    kind: ContextKind,
    *,
    content: dict[str, Any] | None = None,
    patch: dict[str, Any] | None = None,
    allow_empty: bool = False,
) -> dict[str, Any]:
    """Replace the document with `content`, or merge `patch` into it; returns the new version.

    A write that leaves the document as it is adds no version (`unchanged: true`), so an agent that
    rewrites the same context on every turn does not grow the history. The read, merge and write
    happen in one write transaction (`BEGIN IMMEDIATE`), so concurrent patches from other
    processes queue and none is lost.

    Raises:
        InvalidItemError: neither or both of `content` and `patch` given, or `content` {} over a
            non-empty document without `allow_empty`.
        ValueTooLargeError: the document is over the size cap.
    """
    if (content is None) == (patch is None):
        raise InvalidItemError(
            "pass exactly one of content (replaces the whole document) or patch (merges keys; "
            f'a key set to "{DELETE_MARKER}" is removed)'
        )
    with store.write() as conn:
        current = _read(conn, kind)
        document = content if content is not None else apply_patch(current["content"], patch or {})
        if content == {} and current["content"] and not allow_empty:
            raise InvalidItemError(
                f"content {{}} would erase the {kind} context ({len(current['content'])} key(s), version "
                f"{current['version']}); pass allow_empty=true to empty it on purpose, or use patch to change keys"
            )
        # Compared as stored text: in Python 1 == 1.0 == True, in JSON they differ.
        if current["version"] and dump_json(document) == dump_json(current["content"]):
            return {**current, "unchanged": True}
        return write_context(conn, kind, document)


def write_context(
    conn: Connection, kind: ContextKind, document: dict[str, Any], *, changed_at: str | None = None
) -> dict[str, Any]:
    """Store `document` as the next version inside an open write transaction."""
    current_version = conn.execute(select(contexts.c.version).where(contexts.c.kind == kind)).scalar() or 0
    version = current_version + 1
    stamp = changed_at or now()
    body = dump_json(document)
    check_json(document, f"the {kind} context")
    if current_version == 0:
        conn.execute(insert(contexts).values(kind=kind, content=body, version=version, updated_at=stamp))
    else:
        conn.execute(
            update(contexts).where(contexts.c.kind == kind).values(content=body, version=version, updated_at=stamp)
        )
    conn.execute(insert(context_history).values(kind=kind, version=version, content=body, changed_at=stamp))
    provenance.note(conn, f"{kind}_context", 1, version=version)
    search_index.index_item(conn, f"{kind}_context", 1, title=f"{kind} context", body=body, updated_at=stamp)
    return {"content": document, "version": version, "updated_at": stamp}


def get_history(
    store: Store | None,
    kind: ContextKind,
    *,
    limit: int = 10,
    version: int | None = None,
    before: str | None = None,
    after: str | None = None,
) -> list[dict[str, Any]]:
    """Versions of a context document, newest first; `version` picks one, `before`/`after` bound the time.

    Raises:
        ItemNotFoundError: `version` names no version.
    """
    bounds = (
        utc_stamp(before, "before") if before is not None else None,
        utc_stamp(after, "after") if after is not None else None,
    )
    if store is None:
        if version is not None:
            raise ItemNotFoundError(f"{kind} context has no version {version}; it was never written")
        return []
    stmt = select(context_history).where(context_history.c.kind == kind).order_by(context_history.c.version.desc())
    if version is not None:
        stmt = stmt.where(context_history.c.version == version)
    if bounds[0] is not None:
        stmt = stmt.where(context_history.c.changed_at < bounds[0])
    if bounds[1] is not None:
        stmt = stmt.where(context_history.c.changed_at > bounds[1])
    with store.read() as conn:
        rows = conn.execute(stmt.limit(max(1, min(limit, 1000)))).all()
        writers = provenance.writers_of_versions(conn, f"{kind}_context", 1, [r.version for r in rows])
    if version is not None and not rows:
        raise ItemNotFoundError(f"{kind} context has no version {version}; list versions with get_item_history")
    return [
        {
            "version": r.version,
            "content": load_json(r.content),
            "changed_at": r.changed_at,
            "written_by": writers[r.version].describe() if r.version in writers else None,
        }
        for r in rows
    ]


def history_in(conn: Connection, kind: ContextKind, version: int) -> dict[str, Any] | None:
    """The document of one version of a context inside an open transaction, or None if there is no such version."""
    c = context_history.c
    body = conn.execute(select(c.content).where(c.kind == kind, c.version == version)).scalar()
    return None if body is None else dict(load_json(body))


_READ = select(contexts).where(contexts.c.kind == bindparam("kind"))  # built once: get_context reads two per call


def _read(conn: Connection, kind: ContextKind) -> dict[str, Any]:
    row = conn.execute(_READ, {"kind": kind}).first()
    if row is None:
        return {"content": {}, "version": 0, "updated_at": None}
    return {"content": load_json(row.content), "version": row.version, "updated_at": row.updated_at}
