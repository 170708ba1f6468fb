"""Decisions: what was decided, why, and how it is carried out, with tags."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import branches, versions
from homeport.store import citations as cited
from homeport.store import search as search_index
from homeport.store._common import now, row_dict
from homeport.store.database import Prepared, Store, dict_rows
from homeport.store.fields import MAX_TEXT_CHARS, MAX_TITLE_CHARS, check_text
from homeport.store.items import forget_item
from homeport.store.schema import decisions
from homeport.store.tags import filter_by_tags, set_tags, split_tags, tag_list_column, tags_of
from homeport.store.uids import assign_uid

__all__ = [
    "checked_decision",
    "delete_decision",
    "get_decisions",
    "insert_decision",
    "log_decision",
    "rewrite_decision",
    "update_decision",
]

ITEM_TYPE = "decision"


def log_decision(
    store: Store,
    summary: str,
    *,
    rationale: str | None = None,
    implementation_details: str | None = None,
    tags: Sequence[str] | None = None,
    citations: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Record a decision; returns it with its new id. `citations`: anchors for `store.citations`.

    Raises:
        InvalidItemError: an empty summary.
    """
    with store.write() as conn:
        written = insert_decision(
            conn, summary, rationale=rationale, implementation_details=implementation_details, tags=tags
        )
        if citations is not None:
            cited.replace(conn, ITEM_TYPE, written["id"], citations)
        return written


def checked_decision(summary: str | None, rationale: str | None, implementation_details: str | None) -> str:
    """The decision's summary, stripped, once its fields pass the limits (inserts and copies share this).

    Raises:
        InvalidItemError, ValueTooLargeError: an empty summary, or a field over its limit.
    """
    summary = (summary or "").strip()
    if not summary:
        raise InvalidItemError("decision summary is empty; say in one line what was decided")
    check_text(summary, "decision summary", MAX_TITLE_CHARS)
    check_text(rationale, "decision rationale", MAX_TEXT_CHARS)
    check_text(implementation_details, "decision implementation_details", MAX_TEXT_CHARS)
    return summary


def insert_decision(
    conn: Connection,
    summary: str,
    *,
    rationale: str | None = None,
    implementation_details: str | None = None,
    tags: Sequence[str] | None = None,
    item_id: int | None = None,
    created_at: str | None = None,
    updated_at: str | None = None,
) -> dict[str, Any]:
    """Insert inside an open write transaction (batch writes and imports share this)."""
    summary = checked_decision(summary, rationale, implementation_details)
    created = created_at or now()
    updated = updated_at or created
    values = {
        "summary": summary,
        "rationale": rationale,
        "implementation_details": implementation_details,
        "created_at": created,
        "updated_at": updated,
    }
    item_id = _INSERT.insert(conn, {"id": item_id, **values})
    assign_uid(conn, ITEM_TYPE, item_id)
    branches.scope_new_item(conn, ITEM_TYPE, item_id)
    clean = set_tags(conn, ITEM_TYPE, item_id, tags or ())
    search_index.index_item(
        conn,
        ITEM_TYPE,
        item_id,
        title=summary,
        updated_at=updated,
        tags=clean,
        body="\n".join(x for x in (rationale, implementation_details) if x),
    )
    written = {"id": item_id, **values, "tags": clean}
    versions.record(conn, ITEM_TYPE, item_id, written)
    return written


def delete_decision(store: Store, decision_id: int) -> dict[str, Any]:
    """Delete a decision with its tags and links; returns what was removed.

    Raises:
        ItemNotFoundError: no decision has that id.
    """
    with store.write() as conn:
        row = conn.execute(select(decisions).where(decisions.c.id == decision_id)).first()
        if row is None:
            raise ItemNotFoundError(f"decision {decision_id} does not exist; list ids with get_decisions")
        tags = tags_of(conn, ITEM_TYPE, [decision_id]).get(decision_id, [])
        links_removed = forget_item(conn, ITEM_TYPE, decision_id)
        conn.execute(delete(decisions).where(decisions.c.id == decision_id))
        versions.record(conn, ITEM_TYPE, decision_id, {**row_dict(row), "tags": tags}, deleted=True)
    return {"deleted": {"type": ITEM_TYPE, **row_dict(row)}, "links_removed": links_removed}


def get_decisions(
    store: Store | None,
    *,
    limit: int = 20,
    tags_any: Sequence[str] | None = None,
    tags_all: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Decisions, newest first."""
    if store is None:
        return []
    bounds = {"limit": max(1, min(limit, 1000))}
    with store.read() as conn:
        hidden = branches.hidden(store, conn, ITEM_TYPE)  # written on a branch the reader is not on
        if tags_any or tags_all:
            stmt = filter_by_tags(_LATEST, decisions.c.id, ITEM_TYPE, tags_any=tags_any, tags_all=tags_all)
            if hidden:
                stmt = stmt.where(decisions.c.id.not_in(list(hidden)))
                branches.note_matching(conn, ITEM_TYPE, decisions.c.id, hidden, tags_any, tags_all)
            rows = [row_dict(r) for r in conn.execute(stmt, bounds)]
        elif hidden:  # the prepared list, enough rows read to leave the hidden ones out
            branches.note_hidden(ITEM_TYPE, hidden)
            wider = {"limit": bounds["limit"] + len(hidden)}
            rows = [r for r in dict_rows(_LIST.run(conn, wider)) if r["id"] not in hidden][: bounds["limit"]]
        else:  # the common call
            rows = dict_rows(_LIST.run(conn, bounds))
    return [_with_tags(r) for r in rows]


# Prepared once: the insert and the unfiltered list run on every write and read of decisions.
_INSERT = Prepared(insert(decisions))
_LATEST = (
    select(decisions, tag_list_column(ITEM_TYPE, decisions.c.id))
    .order_by(decisions.c.id.desc())
    .limit(bindparam("limit"))
)
_LIST = Prepared(_LATEST)
# update_decision's read of the row and its rewrite (every correction runs both).
_ROW = Prepared(select(decisions).where(decisions.c.id == bindparam("id")))
_REWRITE = Prepared(
    update(decisions)
    .where(decisions.c.id == bindparam("id"))
    .values({c: bindparam(c) for c in ("summary", "rationale", "implementation_details", "updated_at")})
)


def _with_tags(row: dict[str, Any]) -> dict[str, Any]:
    row["tags"] = split_tags(row.pop("tag_list"))
    return row


def update_decision(
    store: Store,
    decision_id: int,
    *,
    summary: str | None = None,
    rationale: str | None = None,
    implementation_details: str | None = None,
    tags: Sequence[str] | None = None,
    citations: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Correct a decision in place: the fields given replace the stored ones (an empty rationale or
    implementation_details clears it); the earlier text stays as a version. Returns the decision.
    `citations` (anchors for `store.citations`) replace its citations; [] removes them.

    Raises:
        InvalidItemError: an empty summary, or a field over its size limit.
        ItemNotFoundError: no decision has that id.
    """
    fields = (summary, rationale, implementation_details, tags, citations)
    if all(value is None for value in fields):
        raise InvalidItemError("nothing to update; pass summary, rationale, implementation_details, tags or cites")
    with store.write() as conn:
        written = rewrite_decision(
            conn,
            decision_id,
            summary=summary,
            rationale=rationale,
            implementation_details=implementation_details,
            tags=tags,
        )
        if citations is not None:
            cited.replace(conn, ITEM_TYPE, decision_id, citations)
        return written


def rewrite_decision(
    conn: Connection,
    decision_id: int,
    *,
    summary: str | None = None,
    rationale: str | None = None,
    implementation_details: str | None = None,
    tags: Sequence[str] | None = None,
) -> dict[str, Any]:
    """`update_decision` inside an open write transaction (a restored version is written with this)."""
    found = dict_rows(_ROW.run(conn, {"id": decision_id}))
    if not found:
        raise ItemNotFoundError(f"decision {decision_id} does not exist; list ids with get_decisions")
    current = found[0]
    values = {
        "summary": current["summary"] if summary is None else summary.strip(),
        "rationale": current["rationale"] if rationale is None else rationale or None,
        "implementation_details": (
            current["implementation_details"] if implementation_details is None else implementation_details or None
        ),
    }
    title = values["summary"] = checked_decision(
        values["summary"], values["rationale"], values["implementation_details"]
    )
    stamp = values["updated_at"] = now()
    _REWRITE.run(conn, {"id": decision_id, **values})
    if tags is None:
        clean = tags_of(conn, ITEM_TYPE, [decision_id]).get(decision_id, [])
    else:
        clean = set_tags(conn, ITEM_TYPE, decision_id, tags)
    search_index.index_item(
        conn,
        ITEM_TYPE,
        decision_id,
        title=title,
        updated_at=stamp,
        tags=clean,
        body="\n".join(x for x in (values["rationale"], values["implementation_details"]) if x),
    )
    written = {**current, **values, "tags": clean}
    versions.record(conn, ITEM_TYPE, decision_id, written)
    return written
