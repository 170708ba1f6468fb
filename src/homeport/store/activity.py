"""What changed recently across every item type: the first call of an agent that resumes work."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from homeport.errors import InvalidItemError
from homeport.store._common import load_json, row_dict, utc_stamp
from homeport.store.database import Store
from homeport.store.schema import context_history, custom_data, decisions, progress, system_patterns
from homeport.store.tags import tags_of

__all__ = ["recent_activity"]


def recent_activity(
    store: Store | None, *, hours_ago: float | None = None, since: str | None = None, limit_per_type: int = 5
) -> dict[str, Any]:
    """Items changed since `since` (ISO 8601) or in the last `hours_ago` hours (default 24), newest first.

    Raises:
        InvalidItemError: both or an unparsable `since`.
    """
    if hours_ago is not None and since is not None:
        raise InvalidItemError("pass hours_ago or since, not both")
    if since is None:
        cutoff = utc_stamp(datetime.now(UTC) - timedelta(hours=24 if hours_ago is None else hours_ago))
    else:
        cutoff = utc_stamp(since, "since")
    limit = max(1, min(limit_per_type, 100))
    out: dict[str, Any] = {
        "since": cutoff,
        "decisions": [],
        "progress": [],
        "system_patterns": [],
        "custom_data": [],
        "context_changes": [],
        "counts": {},
    }
    if store is None:
        return out
    with store.read() as conn:
        for key, table, item_type in (
            ("decisions", decisions, "decision"),
            ("progress", progress, "progress"),
            ("system_patterns", system_patterns, "system_pattern"),
            ("custom_data", custom_data, None),
        ):
            recent = table.c.updated_at >= cutoff
            rows = conn.execute(select(table).where(recent).order_by(table.c.updated_at.desc()).limit(limit)).all()
            items = [row_dict(r) for r in rows]
            if item_type in ("decision", "system_pattern"):
                tags = tags_of(conn, item_type, [r.id for r in rows])
                items = [{**i, "tags": tags.get(i["id"], [])} for i in items]
            if table is custom_data:
                items = [{**i, "value": load_json(i["value"])} for i in items]
            for item in items:
                item.pop("name_key", None)
            out[key] = items
            out["counts"][key] = conn.execute(select(func.count()).select_from(table).where(recent)).scalar()
        changes = conn.execute(
            select(context_history.c.kind, context_history.c.version, context_history.c.changed_at)
            .where(context_history.c.changed_at >= cutoff)
            .order_by(context_history.c.changed_at.desc())
            .limit(limit)
        ).all()
        out["context_changes"] = [
            {"item_type": f"{r.kind}_context", "version": r.version, "changed_at": r.changed_at} for r in changes
        ]
        out["counts"]["context_changes"] = conn.execute(
            select(func.count()).select_from(context_history).where(context_history.c.changed_at >= cutoff)
        ).scalar()
    return out
