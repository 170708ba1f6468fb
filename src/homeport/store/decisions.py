"""Decisions: what was decided, why, and how it is carried out, with tags."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert, select

from homeport.errors import InvalidItemError
from homeport.store import search as search_index
from homeport.store._common import now
from homeport.store.database import Store
from homeport.store.schema import decisions
from homeport.store.tags import filter_by_tags, set_tags, tags_of

__all__ = ["get_decisions", "log_decision"]

ITEM_TYPE = "decision"


def log_decision(store: Store, summary: str, *, rationale: str | None = None,
                 implementation_details: str | None = None, tags: Sequence[str] | None = None) -> dict[str, Any]:
    """Record a decision; returns it with its new id.

    Raises:
        InvalidItemError: an empty summary.
    """
    summary = summary.strip()
    if not summary:
        raise InvalidItemError("decision summary is empty; say in one line what was decided")
    stamp = now()
    with store.write() as conn:
        item_id = conn.execute(insert(decisions).values(
            summary=summary, rationale=rationale, implementation_details=implementation_details,
            created_at=stamp, updated_at=stamp,
        )).inserted_primary_key[0]
        clean = set_tags(conn, ITEM_TYPE, item_id, tags or ())
        search_index.index_item(conn, ITEM_TYPE, item_id, title=summary,
                                body="\n".join(x for x in (rationale, implementation_details) if x), tags=clean)
    return {"id": item_id, "summary": summary, "rationale": rationale,
            "implementation_details": implementation_details, "tags": clean,
            "created_at": stamp, "updated_at": stamp}


def get_decisions(store: Store | None, *, limit: int = 20, tags_any: Sequence[str] | None = None,
                  tags_all: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Decisions, newest first."""
    if store is None:
        return []
    stmt = select(decisions).order_by(decisions.c.id.desc()).limit(max(1, min(limit, 1000)))
    stmt = filter_by_tags(stmt, decisions.c.id, ITEM_TYPE, tags_any=tags_any, tags_all=tags_all)
    with store.read() as conn:
        rows = conn.execute(stmt).all()
        tags = tags_of(conn, ITEM_TYPE, [r.id for r in rows])
    return [{**r._asdict(), "tags": tags.get(r.id, [])} for r in rows]
