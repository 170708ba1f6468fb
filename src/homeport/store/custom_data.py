"""Custom data: any JSON value under (category, key); the category ProjectGlossary is the glossary."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import insert, select, update

from homeport.errors import InvalidItemError
from homeport.store import search as search_index
from homeport.store._common import dump_json, load_json, now
from homeport.store.database import Store
from homeport.store.schema import custom_data

__all__ = ["GLOSSARY_CATEGORY", "get_custom_data", "log_custom_data"]

ITEM_TYPE = "custom_data"
GLOSSARY_CATEGORY = "ProjectGlossary"


def log_custom_data(store: Store, category: str, key: str, value: Any) -> dict[str, Any]:
    """Set the value under (category, key), creating or replacing it.

    Raises:
        InvalidItemError: empty category or key, or a value that is not JSON.
    """
    category, key = category.strip(), key.strip()
    if not category or not key:
        raise InvalidItemError("custom data needs a non-empty category and key")
    body = dump_json(value)
    stamp = now()
    with store.write() as conn:
        existing = conn.execute(select(custom_data.c.id, custom_data.c.created_at)
                                .where(custom_data.c.category == category, custom_data.c.key == key)).first()
        if existing is None:
            item_id = conn.execute(insert(custom_data).values(
                category=category, key=key, value=body, created_at=stamp, updated_at=stamp,
            )).inserted_primary_key[0]
            created = stamp
        else:
            item_id, created = existing
            conn.execute(update(custom_data).where(custom_data.c.id == item_id).values(value=body, updated_at=stamp))
        text_value = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        search_index.index_item(conn, ITEM_TYPE, item_id, title=f"{category}: {key}", body=text_value, tags=(category,))
    return {"id": item_id, "category": category, "key": key, "value": value, "created_at": created, "updated_at": stamp}


def get_custom_data(store: Store | None, *, category: str | None = None, key: str | None = None) -> list[dict[str, Any]]:
    """Entries ordered by category and key, optionally narrowed to a category and key."""
    if store is None:
        return []
    stmt = select(custom_data).order_by(custom_data.c.category, custom_data.c.key)
    if category is not None:
        stmt = stmt.where(custom_data.c.category == category.strip())
    if key is not None:
        stmt = stmt.where(custom_data.c.key == key.strip())
    with store.read() as conn:
        return [{**r._asdict(), "value": load_json(r.value)} for r in conn.execute(stmt)]
