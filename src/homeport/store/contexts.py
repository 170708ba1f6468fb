"""Product context and active context: JSON documents with full replace or key patches, versioned."""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import Connection, insert, select, update

from homeport.errors import InvalidItemError
from homeport.store._common import dump_json, load_json, now
from homeport.store.database import Store
from homeport.store.schema import context_history, contexts

__all__ = ["DELETE_MARKER", "ContextKind", "apply_patch", "get_context", "update_context"]

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


def update_context(store: Store, kind: ContextKind, *, content: dict[str, Any] | None = None,
                   patch: dict[str, Any] | None = None) -> dict[str, Any]:
    """Replace the document with `content`, or merge `patch` into it; returns the new version.

    Raises:
        InvalidItemError: neither or both of `content` and `patch` given.
    """
    if (content is None) == (patch is None):
        raise InvalidItemError(
            "pass exactly one of content (replaces the whole document) or patch (merges keys; "
            f'a key set to "{DELETE_MARKER}" is removed)'
        )
    with store.write() as conn:
        current = _read(conn, kind)
        document = content if content is not None else apply_patch(current["content"], patch or {})
        version = current["version"] + 1
        stamp = now()
        body = dump_json(document)
        if current["version"] == 0:
            conn.execute(insert(contexts).values(kind=kind, content=body, version=version, updated_at=stamp))
        else:
            conn.execute(update(contexts).where(contexts.c.kind == kind)
                         .values(content=body, version=version, updated_at=stamp))
        conn.execute(insert(context_history).values(kind=kind, version=version, content=body, changed_at=stamp))
    return {"content": document, "version": version, "updated_at": stamp}


def _read(conn: Connection, kind: ContextKind) -> dict[str, Any]:
    row = conn.execute(select(contexts).where(contexts.c.kind == kind)).first()
    if row is None:
        return {"content": {}, "version": 0, "updated_at": None}
    return {"content": load_json(row.content), "version": row.version, "updated_at": row.updated_at}
