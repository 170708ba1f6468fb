"""A slice of a copy's plan written in a few statements per table (executemany), not a round trip per row.

The target of a copy holds nothing but earlier batches of the same plan (`copying._begin` emptied it), so
every item is a plain INSERT with the source's id and uid: no upserts and no lookups, which is what made
the item-by-item path cost ten statements per item (3-5 ms each against PostgreSQL). Everything the item
modules write beside an item is written here too, in the same transaction: its uid, its tags, its search
entry (on PostgreSQL the same statement computes the tsvector), its stale vectors removed, and the writer
of the call when one is set (provenance). `check_item` applies the item modules' own limits and messages
first, so a bad item is still refused by section and id; a link's ends must be items of the copied memory
(the plan writes every item before the links). Context versions are few and go through `write_context`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert

from homeport.errors import InvalidItemError
from homeport.store import provenance, versions
from homeport.store import search as search_index
from homeport.store._common import normalize_tags
from homeport.store.custom_data import checked_custom_data
from homeport.store.database import advance_sequence
from homeport.store.decisions import checked_decision
from homeport.store.fields import MAX_LABEL_CHARS, MAX_TEXT_CHARS, check_text
from homeport.store.items import CONTEXT_ID, CONTEXT_TYPES, check_type
from homeport.store.patterns import checked_pattern
from homeport.store.progress import _clean as _clean_progress
from homeport.store.schema import custom_data, decisions, item_tags, item_uids, links, progress, system_patterns
from homeport.store.uids import new_uid

__all__ = ["CheckedItem", "check_item", "known_items", "write_items"]

_TABLES = {
    "decisions": (decisions, "decision"),
    "progress": (progress, "progress"),
    "system_patterns": (system_patterns, "system_pattern"),
    "custom_data": (custom_data, "custom_data"),
    "links": (links, "link"),
}


@dataclass
class CheckedItem:
    """One item as its rows: the table's row, and the rows the normal write path adds beside it."""

    section: str
    row: dict[str, Any]
    uid: str | None = None
    tags: list[str] | None = None  # None: the item type has no tags
    index: dict[str, Any] | None = None


def known_items(data: dict[str, list[dict[str, Any]]]) -> dict[str, set[int]]:
    """The (type -> ids) a link of this memory may name: every item the plan writes before the links."""
    known = {item_type: {i["id"] for i in data[section]} for section, (_, item_type) in _TABLES.items()}
    for kind in CONTEXT_TYPES:
        known[kind] = {CONTEXT_ID} if data[kind] else set()
    return known


def check_item(section: str, item: dict[str, Any], known: dict[str, set[int]]) -> CheckedItem:
    """The item's rows, after the checks its module's insert makes (same messages).

    Raises:
        InvalidItemError, ValueTooLargeError: what inserting the item normally raises, or a link to a missing item.
    """
    if section == "links":
        return _checked_link(item, known)
    stamps = {"created_at": item["created_at"], "updated_at": item["updated_at"]}
    if section == "decisions":
        summary = checked_decision(item["summary"], item["rationale"], item["implementation_details"])
        row = {"id": item["id"], "summary": summary, "rationale": item["rationale"]}
        row |= {"implementation_details": item["implementation_details"], **stamps}
        tags = normalize_tags(item["tags"])
        body = "\n".join(x for x in (item["rationale"], item["implementation_details"]) if x)
        index = search_index.index_row(
            "decision", item["id"], title=summary, body=body, updated_at=item["updated_at"], tags=tags
        )
        return CheckedItem(section, row, _uid(item), tags, index)
    if section == "progress":
        status, description = (
            _clean_progress(item["status"], "status"),
            _clean_progress(item["description"], "description"),
        )
        row = {"id": item["id"], "status": status, "description": description, "parent_id": item.get("parent_id")}
        index = search_index.index_row(
            "progress",
            item["id"],
            title=description[:120],
            body=f"{description}\n{status}",
            updated_at=item["updated_at"],
        )
        return CheckedItem(section, row | stamps, _uid(item), None, index)
    if section == "system_patterns":
        name, description = checked_pattern(item["name"], item["description"])
        row = {"id": item["id"], "name": name, "name_key": name.casefold(), "description": description, **stamps}
        tags = normalize_tags(item["tags"])
        index = search_index.index_row(
            "system_pattern", item["id"], title=name, body=description, updated_at=item["updated_at"], tags=tags
        )
        return CheckedItem(section, row, _uid(item), tags, index)
    if section == "custom_data":
        value = item["value"]
        category, key, body = checked_custom_data(item["category"], item["key"], value)
        row = {"id": item["id"], "category": category, "key": key, "value": body, **stamps}
        # As custom_data indexes it: canonical text (sorted keys).
        text_value = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        index = search_index.index_row(
            "custom_data",
            item["id"],
            title=f"{category}: {key}",
            body=text_value,
            updated_at=item["updated_at"],
            category=category,
        )
        return CheckedItem(section, row, _uid(item), None, index)
    raise InvalidItemError(f"unknown section {section!r} in a copy plan")


def _checked_link(item: dict[str, Any], known: dict[str, set[int]]) -> CheckedItem:
    relationship = (item["relationship"] or "").strip()
    if not relationship:
        raise InvalidItemError("relationship is empty; name it, e.g. implements, depends_on, relates_to")
    check_text(relationship, "relationship", MAX_LABEL_CHARS["relationship"])
    check_text(item["description"], "link description", MAX_TEXT_CHARS)
    ends = [(item["source_type"], item["source_id"]), (item["target_type"], item["target_id"])]
    if ends[0] == ends[1]:
        raise InvalidItemError(f"{ends[0][0]} {ends[0][1]} cannot be linked to itself")
    # As items.require_item, against the copied memory; refused as invalid (named), not as a failed batch
    # that a rerun could resume: the source itself is damaged.
    for item_type, item_id in ends:
        check_type(item_type)
        if item_type in CONTEXT_TYPES and item_id != CONTEXT_ID:
            raise InvalidItemError(f"{item_type} has the single id {CONTEXT_ID}, not {item_id}")
        if item_id not in known[item_type]:
            raise InvalidItemError(
                f"{item_type} {item_id} does not exist in the source; remove the link there and copy again"
            )
    row = {
        "id": item["id"],
        "source_type": ends[0][0],
        "source_id": ends[0][1],
        "target_type": ends[1][0],
        "target_id": ends[1][1],
        "relationship": relationship,
        "description": item["description"],
        "created_at": item["created_at"],
    }
    return CheckedItem("links", row)


def _uid(item: dict[str, Any]) -> str:
    """The uid the source gave the item (a source from before uids has none: a new one, as an insert gives)."""
    return item.get("uid") or new_uid()


def write_items(conn: Connection, checked: Sequence[CheckedItem], *, record: bool = True) -> None:
    """Insert checked items inside the open transaction: per section, one executemany per table.

    Sections are written in plan order, and rows in the order given, so a progress entry follows its parent.
    `record`: add each item's first version (or writer row) for the writer of the call; a copy that carries
    the source's versions and writers passes False.
    """
    runs: dict[str, list[CheckedItem]] = {}
    for c in checked:
        runs.setdefault(c.section, []).append(c)
    for section, run in runs.items():
        table, item_type = _TABLES[section]
        conn.execute(insert(table), [c.row for c in run])
        if conn.dialect.name != "sqlite":  # ids given: the sequence must not hand them out again
            advance_sequence(conn, table.name, max(c.row["id"] for c in run))
        uids = [{"item_type": item_type, "item_id": c.row["id"], "uid": c.uid} for c in run if c.uid]
        if uids:
            conn.execute(insert(item_uids), uids)
        tags = [
            {"item_type": item_type, "item_id": c.row["id"], "tag": t, "tag_key": t.casefold()}
            for c in run
            for t in c.tags or ()
        ]
        if tags:
            conn.execute(insert(item_tags), tags)
        search_index.index_items(conn, [c.index for c in run if c.index is not None])
        if not record:
            continue
        if item_type in versions.VERSIONED_TYPES:  # version 1, with the writer of the call
            versions.record_many(conn, item_type, [_as_read(c) for c in run])
        else:
            provenance.note_items(conn, item_type, [c.row["id"] for c in run])


def _as_read(c: CheckedItem) -> dict[str, Any]:
    """The item as its `get_` tool returns it: tags beside the row, custom data's value as JSON, not text."""
    item = {**c.row, "tags": c.tags or []}
    if c.section == "custom_data":
        item["value"] = json.loads(item["value"])
    return item
