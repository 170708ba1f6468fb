"""Many items of one type in one transaction: all are written, or none."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection

from homeport.errors import HomeportError, InvalidItemError
from homeport.store.custom_data import upsert_custom_data
from homeport.store.database import Store
from homeport.store.decisions import insert_decision
from homeport.store.patterns import upsert_system_pattern
from homeport.store.progress import insert_progress

__all__ = ["BATCH_FIELDS", "MAX_BATCH", "batch_log_items"]

MAX_BATCH = 500

# item type -> (required fields, optional fields, writer)
BATCH_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], Callable[..., dict[str, Any]]]] = {
    "decision": (
        ("summary",),
        ("rationale", "implementation_details", "tags"),
        lambda c, summary, **kw: insert_decision(c, summary, **kw),
    ),
    "progress": (
        ("status", "description"),
        ("parent_id",),
        lambda c, status, description, **kw: insert_progress(c, status, description, **kw),
    ),
    "system_pattern": (
        ("name", "description"),
        ("tags",),
        lambda c, name, description, **kw: upsert_system_pattern(c, name, description, **kw),
    ),
    "custom_data": (
        ("category", "key", "value"),
        (),
        lambda c, category, key, value: upsert_custom_data(c, category, key, value),
    ),
}


def batch_log_items(store: Store, item_type: str, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Write every item or none.

    Raises:
        InvalidItemError: an unknown type, too many items, or an invalid item (its index is named).
    """
    if item_type not in BATCH_FIELDS:
        raise InvalidItemError(f"batch item_type {item_type!r} is not one of {', '.join(BATCH_FIELDS)}")
    if not items:
        raise InvalidItemError("items is empty; pass 1 to 500 items")
    if len(items) > MAX_BATCH:
        raise InvalidItemError(f"{len(items)} items is more than {MAX_BATCH}; split the batch")
    required, optional, write = BATCH_FIELDS[item_type]
    for index, item in enumerate(items):
        _check_fields(index, item, required, optional)
    with store.write() as conn:
        return [_write_one(conn, index, write, item) for index, item in enumerate(items)]


# The JSON type each field must have; custom data values may be anything.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "summary": (str,),
    "rationale": (str, type(None)),
    "implementation_details": (str, type(None)),
    "tags": (list, type(None)),
    "status": (str,),
    "description": (str,),
    "parent_id": (int, type(None)),
    "name": (str,),
    "category": (str,),
    "key": (str,),
}


def _check_fields(index: int, item: Any, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
    if not isinstance(item, dict):
        raise InvalidItemError(f"item {index} is not an object; nothing was written")
    for field, value in item.items():
        allowed = _FIELD_TYPES.get(field)
        wrong = allowed is not None and (not isinstance(value, allowed) or isinstance(value, bool))
        if wrong or (field == "tags" and value is not None and not all(isinstance(t, str) for t in value)):
            raise InvalidItemError(
                f"item {index}: field {field} has the wrong type ({type(value).__name__}); nothing was written"
            )
    missing = [f for f in required if f not in item]
    unknown = sorted(set(item) - set(required) - set(optional))
    if missing or unknown:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unknown field(s) {', '.join(unknown)}"] if unknown else []
        )
        raise InvalidItemError(
            f"item {index}: {'; '.join(parts)} (fields: {', '.join(required + optional)}); nothing was written"
        )


def _write_one(
    conn: Connection, index: int, write: Callable[..., dict[str, Any]], item: dict[str, Any]
) -> dict[str, Any]:
    try:
        return write(conn, **item)
    except HomeportError as exc:
        raise InvalidItemError(f"item {index}: {exc.message}; nothing was written") from exc
