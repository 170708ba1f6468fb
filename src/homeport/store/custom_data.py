"""Custom data: any JSON value under (category, key); the category ProjectGlossary is the glossary."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import search as search_index
from homeport.store import versions
from homeport.store._common import dump_json, load_json, now, row_dict
from homeport.store.database import Prepared, Store, dict_rows
from homeport.store.fields import MAX_LABEL_CHARS, check_json, check_text
from homeport.store.items import forget_item
from homeport.store.schema import custom_data
from homeport.store.uids import assign_uid

__all__ = [
    "GLOSSARY_CATEGORY",
    "checked_custom_data",
    "delete_custom_data",
    "get_custom_data",
    "log_custom_data",
    "upsert_custom_data",
]

ITEM_TYPE = "custom_data"
GLOSSARY_CATEGORY = "ProjectGlossary"


def log_custom_data(store: Store, category: str, key: str, value: Any) -> dict[str, Any]:
    """Set the value under (category, key), creating or replacing it.

    Raises:
        InvalidItemError: empty category or key, or a value that is not JSON.
    """
    with store.write() as conn:
        return upsert_custom_data(conn, category, key, value)


def checked_custom_data(category: str | None, key: str | None, value: Any) -> tuple[str, str, str]:
    """The entry's category and key, stripped, and its value as stored JSON, once they pass the limits
    (upserts and copies share this).

    Raises:
        InvalidItemError, ValueTooLargeError: an empty category or key, a field over its limit, a value
            that is not JSON.
    """
    category, key = (category or "").strip(), (key or "").strip()
    if not category or not key:
        raise InvalidItemError("custom data needs a non-empty category and key")
    check_text(category, "custom data category", MAX_LABEL_CHARS["category"])
    check_text(key, "custom data key", MAX_LABEL_CHARS["key"])
    body = dump_json(value)
    check_json(value, "custom data value")
    return category, key, body


def upsert_custom_data(
    conn: Connection,
    category: str,
    key: str,
    value: Any,
    *,
    item_id: int | None = None,
    created_at: str | None = None,
    updated_at: str | None = None,
) -> dict[str, Any]:
    """Create or replace inside an open write transaction (batch writes and imports share this)."""
    category, key, body = checked_custom_data(category, key, value)
    stamp = updated_at or now()
    existing = _FIND.run(conn, {"category": category, "key": key}).fetchone()
    if existing is None:
        created = created_at or stamp
        values = {"category": category, "key": key, "value": body, "created_at": created, "updated_at": stamp}
        item_id = _INSERT.insert(conn, {"id": item_id, **values})
        assign_uid(conn, ITEM_TYPE, item_id)
    else:
        item_id, created = existing
        _UPDATE.run(conn, {"id": item_id, "value": body, "updated_at": stamp})
    # Canonical text (sorted keys), so the index is the same however the value's keys were ordered.
    text_value = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    search_index.index_item(
        conn, ITEM_TYPE, item_id, title=f"{category}: {key}", body=text_value, updated_at=stamp, category=category
    )
    written = {
        "id": item_id,
        "category": category,
        "key": key,
        "value": value,
        "created_at": created,
        "updated_at": stamp,
    }
    versions.record(conn, ITEM_TYPE, item_id, written)
    return written


def delete_custom_data(store: Store, category: str, key: str) -> dict[str, Any]:
    """Delete the entry under (category, key) with its links; returns what was removed.

    Raises:
        ItemNotFoundError: nothing is stored there.
    """
    with store.write() as conn:
        row = conn.execute(
            select(custom_data).where(custom_data.c.category == category.strip(), custom_data.c.key == key.strip())
        ).first()
        if row is None:
            raise ItemNotFoundError(
                f"no custom data under category {category!r} and key {key!r}; list them with get_custom_data"
            )
        links_removed = forget_item(conn, ITEM_TYPE, row.id)
        conn.execute(delete(custom_data).where(custom_data.c.id == row.id))
        gone = {**row_dict(row), "value": load_json(row.value)}
        versions.record(conn, ITEM_TYPE, row.id, gone, deleted=True)
    return {
        "deleted": {"type": ITEM_TYPE, **gone},
        "links_removed": links_removed,
    }


def get_custom_data(
    store: Store | None, *, category: str | None = None, key: str | None = None
) -> list[dict[str, Any]]:
    """Entries ordered by category and key, optionally narrowed to a category and key."""
    if store is None:
        return []
    params = {}
    if category is not None:
        params["category"] = category.strip()
    if key is not None:
        params["key"] = key.strip()
    listing = _LISTINGS[category is not None, key is not None]
    with store.read() as conn:
        rows = dict_rows(listing.run(conn, params))
    for row in rows:
        row["value"] = load_json(row["value"])
    return rows


# Prepared once: every set and get of custom data runs these.
_INSERT = Prepared(insert(custom_data))
_UPDATE = Prepared(
    update(custom_data)
    .where(custom_data.c.id == bindparam("id"))
    .values(value=bindparam("value"), updated_at=bindparam("updated_at"))
)
_LISTING = select(custom_data).order_by(custom_data.c.category, custom_data.c.key)
_BY_CATEGORY = custom_data.c.category == bindparam("category")
_BY_KEY = custom_data.c.key == bindparam("key")
_LISTINGS = {  # (category given, key given) -> its listing
    (False, False): Prepared(_LISTING),
    (True, False): Prepared(_LISTING.where(_BY_CATEGORY)),
    (False, True): Prepared(_LISTING.where(_BY_KEY)),
    (True, True): Prepared(_LISTING.where(_BY_CATEGORY, _BY_KEY)),
}
_FIND = Prepared(select(custom_data.c.id, custom_data.c.created_at).where(_BY_CATEGORY, _BY_KEY))
