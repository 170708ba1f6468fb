"""Tags of any item type, matched case-insensitively."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Label, Select, bindparam, delete, func, insert, select

from homeport.store._common import normalize_tags
from homeport.store.database import ByIds, Prepared
from homeport.store.schema import item_tags

__all__ = ["filter_by_tags", "set_tags", "split_tags", "tag_list_column", "tags_of"]

_SEPARATOR = "\x1f"  # the ASCII unit separator never appears in a tag (normalize_tags refuses it)


def tag_list_column(item_type: str, id_column: Any) -> Label[Any]:
    """A column with each row's tags in one string, so a list query needs no second query for tags."""
    return (
        select(func.aggregate_strings(item_tags.c.tag, _SEPARATOR))
        .where(item_tags.c.item_type == item_type, item_tags.c.item_id == id_column)
        .scalar_subquery()
        .label("tag_list")
    )


def split_tags(tag_list: str | None) -> list[str]:
    """The tags of a `tag_list_column` value, in the order `tags_of` gives them."""
    return sorted(tag_list.split(_SEPARATOR), key=str.casefold) if tag_list else []


def set_tags(conn: Connection, item_type: str, item_id: int, tags: Iterable[str]) -> list[str]:
    clean = normalize_tags(tags)
    _DELETE_TAGS.run(conn, {"type": item_type, "id": item_id})
    if clean:
        _INSERT_TAG.run_many(
            conn, [{"item_type": item_type, "item_id": item_id, "tag": t, "tag_key": t.casefold()} for t in clean]
        )
    return clean


# Prepared once: set_tags runs on every write of a tagged item.
_DELETE_TAGS = Prepared(
    delete(item_tags).where(item_tags.c.item_type == bindparam("type"), item_tags.c.item_id == bindparam("id"))
)
_INSERT_TAG = Prepared(insert(item_tags))


# Built once: only the type and the ids change from call to call, and building the expression
# (an IN of literal values) cost more than running it (get_context reads the tags of 60 items).
_TAGS_OF = ByIds(
    lambda ids_in: (
        select(item_tags.c.item_id, item_tags.c.tag)
        .where(item_tags.c.item_type == bindparam("type"), ids_in(item_tags.c.item_id))
        .order_by(item_tags.c.item_id, item_tags.c.tag_key)
    )
)


def tags_of(conn: Connection, item_type: str, ids: Sequence[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    if not ids:
        return out
    for item_id, tag in _TAGS_OF.run(conn, {"type": item_type, "ids": ids}):
        out[item_id].append(tag)
    return out


def filter_by_tags(
    stmt: Select[Any],
    id_column: Any,
    item_type: str,
    *,
    tags_any: Iterable[str] | None,
    tags_all: Iterable[str] | None,
) -> Select[Any]:
    """Narrow `stmt` to items carrying any of `tags_any` and all of `tags_all`."""
    any_keys = [t.casefold() for t in normalize_tags(tags_any)]
    all_keys = [t.casefold() for t in normalize_tags(tags_all)]
    if any_keys:
        stmt = stmt.where(
            id_column.in_(
                select(item_tags.c.item_id).where(item_tags.c.item_type == item_type, item_tags.c.tag_key.in_(any_keys))
            )
        )
    if all_keys:
        stmt = stmt.where(
            id_column.in_(
                select(item_tags.c.item_id)
                .where(item_tags.c.item_type == item_type, item_tags.c.tag_key.in_(all_keys))
                .group_by(item_tags.c.item_id)
                .having(func.count() == len(all_keys))
            )
        )
    return stmt
