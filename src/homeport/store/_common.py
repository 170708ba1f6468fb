"""Small shared pieces of the item modules: timestamps, JSON text, tag normalisation."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from homeport.errors import InvalidItemError

__all__ = ["ITEM_TYPES", "dump_json", "load_json", "normalize_tags", "now", "row_dict", "utc_stamp"]


# Every item type of the memory; the contexts are single documents (id 1).
ITEM_TYPES = ("decision", "progress", "system_pattern", "custom_data", "product_context", "active_context")

_STAMP = "%Y-%m-%dT%H:%M:%S.%fZ"


def now() -> str:
    return datetime.now(UTC).strftime(_STAMP)


def utc_stamp(value: str | datetime, name: str = "time") -> str:
    """An ISO 8601 time (any offset; naive means UTC) in the stored form, so text comparison is time order.

    Raises:
        InvalidItemError: `value` is not an ISO 8601 time.
    """
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InvalidItemError(f"{name} {value!r} is not an ISO 8601 time, e.g. 2026-11-21T09:00:00Z") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime(_STAMP)


def dump_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidItemError(
            f"value is not JSON ({exc}); pass strings, numbers, booleans, null, lists or objects"
        ) from exc


def load_json(text: str) -> Any:
    return json.loads(text)


def normalize_tags(tags: Iterable[str] | None) -> list[str]:
    """Trimmed, empty ones dropped, duplicates (case-insensitive) removed; first spelling kept."""
    seen: set[str] = set()
    out: list[str] = []
    for raw in tags or ():
        tag = raw.strip()
        if not tag:
            continue
        if "\x1f" in tag:  # the separator of aggregated tag lists (homeport.store.tags)
            raise InvalidItemError(f"tag {tag[:40]!r} contains the control character U+001F; remove it")
        if len(tag) > 200:
            raise InvalidItemError(f"tag {tag[:40]!r}... is longer than 200 characters")
        key = tag.casefold()
        if key not in seen:
            seen.add(key)
            out.append(tag)
    return out


def row_dict(row: Any) -> dict[str, Any]:
    """A result row as a dict with plain `str` keys.

    SQLAlchemy names columns with `quoted_name`, a `str` subclass; pydantic serializes such keys
    through SQLAlchemy's `__getattr__`, hundreds of calls per tool result (half the time of a read).
    """
    return dict(zip(_plain(tuple(row._fields)), row, strict=True))


@functools.lru_cache(maxsize=256)
def _plain(fields: Sequence[str]) -> tuple[str, ...]:
    return tuple(str.__str__(f) for f in fields)
