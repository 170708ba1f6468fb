"""The operations of a tidy changeset, and the snapshots that make them reversible (`homeport.store.tidy`).

An operation changes only an item's lifecycle state (`homeport.store.lifecycle`), its links and its
tags, never its row: merge, supersede, archive, relink, retag. A snapshot of an item is its row, tags,
links and state; its hash is the item's version hash, and the snapshot's tags, links and state are
what a revert writes back (link rows under their own ids).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, delete, insert, or_, select

from homeport.errors import InvalidItemError, ItemNotFoundError
from homeport.store import search as search_index
from homeport.store import versions
from homeport.store._common import dump_json, row_dict
from homeport.store.lifecycle import TABLES, TIDY_TYPES, change_state, state_of
from homeport.store.links import insert_link
from homeport.store.schema import links
from homeport.store.tags import set_tags, tags_of
from homeport.store.tidy_proposals import SUPERSEDING

__all__ = [
    "OPERATIONS",
    "Key",
    "checked_operation",
    "key_named",
    "key_of",
    "keys_of",
    "name_of",
    "names",
    "neighbours",
    "restore_links",
    "run",
    "snapshot",
    "snapshot_hash",
    "state_row",
    "write_tags",
]

OPERATIONS = ("merge", "supersede", "archive", "relink", "retag")
TAGGED = ("decision", "system_pattern")
Key = tuple[str, int]


def run(conn: Connection, changeset_id: int, op: dict[str, Any]) -> None:
    kind = op["op"]
    item = key_of(op.get("item"))
    if kind == "archive":
        change_state(conn, *item, archived=True, changeset_id=changeset_id)
    elif kind == "supersede":
        by = key_of(op["by"])
        change_state(conn, *item, superseded_type=by[0], superseded_id=by[1], changeset_id=changeset_id)
        if not _linked(conn, item, by, tuple(SUPERSEDING)):
            insert_link(conn, item[0], item[1], by[0], by[1], "superseded_by")
    elif kind == "merge":
        into = key_of(op["into"])
        for link in _links_of(conn, [item]):
            _move_link(conn, row_dict(link), item, into)
        if not _linked(conn, item, into, ("merged_into",)):
            insert_link(conn, item[0], item[1], into[0], into[1], "merged_into")
        change_state(
            conn, *item, archived=True, superseded_type=into[0], superseded_id=into[1], changeset_id=changeset_id
        )
        if item[0] == into[0] and item[0] in TAGGED:
            ours = tags_of(conn, into[0], [into[1]]).get(into[1], [])
            theirs = tags_of(conn, item[0], [item[1]]).get(item[1], [])
            union = [*ours, *(t for t in theirs if t.casefold() not in {o.casefold() for o in ours})]
            if union != ours:
                write_tags(conn, into, union)
    elif kind == "relink":
        found = conn.execute(select(links).where(links.c.id == op["link_id"])).first()
        if found is not None:
            _move_link(conn, row_dict(found), key_of(op["from"]), key_of(op["to"]))
    elif kind == "retag":
        write_tags(conn, item, op["tags"])


def _move_link(conn: Connection, link: dict[str, Any], old: Key, new: Key) -> None:
    """The link with its `old` end at `new` instead (dropped when it would link an item to itself)."""
    source = (link["source_type"], link["source_id"])
    target = (link["target_type"], link["target_id"])
    if old not in (source, target):
        return
    if link["relationship"] == "merged_into" or {source, target} == {old, new}:
        return  # the link between the two merged items says what happened: it stays
    source = new if source == old else source
    target = new if target == old else target
    conn.execute(delete(links).where(links.c.id == link["id"]))
    if source != target:
        insert_link(
            conn,
            source[0],
            source[1],
            target[0],
            target[1],
            link["relationship"],
            description=link["description"],
            created_at=link["created_at"],
        )


def write_tags(conn: Connection, key: Key, tags: Sequence[str]) -> None:
    """New tags of a decision or pattern: the index and a version follow; the row itself is unchanged."""
    item_type, item_id = key
    clean = set_tags(conn, item_type, item_id, tags)
    row = row_dict(conn.execute(select(TABLES[item_type]).where(TABLES[item_type].c.id == item_id)).one())
    if item_type == "decision":
        title, body = row["summary"], "\n".join(x for x in (row["rationale"], row["implementation_details"]) if x)
    else:
        title, body = row["name"], row["description"]
    search_index.index_item(conn, item_type, item_id, title=title, body=body, updated_at=row["updated_at"], tags=clean)
    versions.record(conn, item_type, item_id, {**row, "tags": clean})


def restore_links(conn: Connection, keys: Sequence[Key], wanted: Iterable[dict[str, Any]]) -> None:
    rows = {link["id"]: link for link in wanted}
    current = {link.id for link in _links_of(conn, keys)}
    stray = sorted(current - set(rows))
    if stray:
        conn.execute(delete(links).where(links.c.id.in_(stray)))
    for link_id in sorted(set(rows) - current):
        link = rows[link_id]
        # the edge may exist under a newer id (a relink re-created it): the old row takes its place
        conn.execute(
            delete(links).where(
                links.c.source_type == link["source_type"],
                links.c.source_id == link["source_id"],
                links.c.target_type == link["target_type"],
                links.c.target_id == link["target_id"],
                links.c.relationship == link["relationship"],
            )
        )
        conn.execute(insert(links).values(**link))


def _linked(conn: Connection, a: Key, b: Key, relationships: Sequence[str]) -> bool:
    c = links.c
    pair = or_(
        (c.source_type == a[0]) & (c.source_id == a[1]) & (c.target_type == b[0]) & (c.target_id == b[1]),
        (c.source_type == b[0]) & (c.source_id == b[1]) & (c.target_type == a[0]) & (c.target_id == a[1]),
    )
    return conn.execute(select(c.id).where(pair, c.relationship.in_(list(relationships)))).first() is not None


def checked_operation(conn: Connection, op: Any) -> dict[str, Any]:
    if not isinstance(op, dict) or op.get("op") not in OPERATIONS:
        raise InvalidItemError(
            f"operation {str(op)[:80]!r} is not one of {', '.join(OPERATIONS)}; e.g. "
            '{"op": "archive", "item": {"type": "decision", "id": 3}}'
        )
    kind = op["op"]
    needed = {
        "merge": ("item", "into"),
        "supersede": ("item", "by"),
        "archive": ("item",),
        "relink": ("link_id", "from", "to"),
        "retag": ("item", "tags"),
    }[kind]
    absent = [n for n in needed if n not in op]
    if absent:
        raise InvalidItemError(f"{kind} needs {', '.join(needed)}; missing {', '.join(absent)}")
    out: dict[str, Any] = {"op": kind}
    for name in needed:
        if name == "link_id":
            found = conn.execute(select(links.c.id).where(links.c.id == op["link_id"])).first()
            if found is None:
                raise ItemNotFoundError(f"link {op['link_id']} does not exist; find links with get_linked_items")
            out[name] = int(op["link_id"])
        elif name == "tags":
            if not isinstance(op["tags"], list) or not all(isinstance(t, str) for t in op["tags"]):
                raise InvalidItemError("retag needs tags: a list of strings")
            out[name] = list(op["tags"])
        else:
            key = key_of(op[name])
            _require(conn, key)
            out[name] = {"type": key[0], "id": key[1]}
    if kind == "merge" and (out["item"]["type"] != out["into"]["type"] or out["item"] == out["into"]):
        raise InvalidItemError("merge joins two different items of one type")
    if kind == "supersede" and out["item"] == out["by"]:
        raise InvalidItemError("an item cannot supersede itself")
    if kind == "retag" and out["item"]["type"] not in TAGGED:
        raise InvalidItemError(f"only {' and '.join(TAGGED)} items have tags")
    return out


def _require(conn: Connection, key: Key) -> None:
    table = TABLES[key[0]]
    if conn.execute(select(table.c.id).where(table.c.id == key[1])).first() is None:
        raise ItemNotFoundError(f"{key[0]} {key[1]} does not exist; find ids with search or the get_ tools")


def snapshot(conn: Connection, key: Key) -> dict[str, Any]:
    table = TABLES[key[0]]
    row = conn.execute(select(table).where(table.c.id == key[1])).first()
    return {
        "row": row_dict(row) if row is not None else None,
        "tags": tags_of(conn, key[0], [key[1]]).get(key[1], []),
        "links": [row_dict(link) for link in _links_of(conn, [key])],
        "state": state_of(conn, *key),
    }


def snapshot_hash(snapshot: dict[str, Any], *, rows: bool) -> str:
    what = snapshot if rows else {k: v for k, v in snapshot.items() if k != "row"}
    return hashlib.sha256(dump_json(what).encode("utf-8")).hexdigest()


def state_row(state: dict[str, Any] | None) -> dict[str, Any] | None:
    if state is None:
        return None
    return {k: v for k, v in state.items() if k not in ("item_type", "item_id")}


def _links_of(conn: Connection, keys: Sequence[Key]) -> list[Any]:
    if not keys:
        return []
    c = links.c
    ends = [((c.source_type == t) & (c.source_id == i)) | ((c.target_type == t) & (c.target_id == i)) for t, i in keys]
    return list(conn.execute(select(links).where(or_(*ends)).order_by(c.id)).all())


def neighbours(conn: Connection, keys: Sequence[Key]) -> set[Key]:
    out: set[Key] = set()
    for link in _links_of(conn, keys):
        for end in ((link.source_type, link.source_id), (link.target_type, link.target_id)):
            if end[0] in TIDY_TYPES:
                out.add(end)
    return out


def keys_of(entries: Iterable[dict[str, Any]], *, every: bool = False) -> list[Key]:
    """The items the entries' operations name (every=True: also those of entries without operations)."""
    seen: dict[Key, None] = {}
    for entry in entries:
        for op in entry["operations"]:
            for name in ("item", "into", "by", "from", "to"):
                if name in op:
                    seen.setdefault(key_of(op[name]))
        if every:
            for ref in entry.get("items", ()):
                if ref["type"] in TIDY_TYPES:
                    seen.setdefault((ref["type"], ref["id"]))
    return list(seen)


def key_of(ref: Any) -> Key:
    """(type, id) of `{"type": ..., "id": ...}` or "type:id"."""
    if isinstance(ref, str) and ":" in ref:
        item_type, _, number = ref.partition(":")
        ref = {"type": item_type.strip(), "id": number.strip()}
    if not isinstance(ref, dict) or ref.get("type") not in TIDY_TYPES:
        raise InvalidItemError(
            f'{str(ref)[:80]!r} does not name an item; use {{"type": "decision", "id": 3}} or "decision:3" '
            f"(types: {', '.join(TIDY_TYPES)})"
        )
    try:
        return (ref["type"], int(ref["id"]))
    except (TypeError, ValueError):
        raise InvalidItemError(f"item id {ref.get('id')!r} is not a number") from None


def name_of(key: Key) -> str:
    return f"{key[0]}:{key[1]}"


def key_named(name: str) -> Key:
    item_type, _, number = name.partition(":")
    return (item_type, int(number))


def names(keys: Sequence[Key]) -> str:
    shown = ", ".join(f"{t} {i}" for t, i in keys[:10])
    return shown + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")
