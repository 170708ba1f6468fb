"""The local side of a sync: each item of a store as a *view*, what its file must say (`apply` writes
files back into a store).

A view is everything about an item that travels: its fields, tags, outgoing links (their targets named
by the target's file key, which is the same in every replica), its uid and stamps. Its digest is kept in
`sync_items`, so a sync reads all items in a few queries but rebuilds only the files of items whose
digest changed.

File keys: decisions and progress entries by uid; custom data by category and key, system patterns by
name (two replicas that create the same entry meet in one file: the stores enforce those as unique);
the two contexts by kind.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, false, func, or_, select, true

from homeport.store._common import dump_json
from homeport.store.items import CONTEXT_ID, CONTEXT_TYPES
from homeport.store.schema import (
    contexts,
    custom_data,
    decisions,
    item_tags,
    item_uids,
    item_versions,
    links,
    progress,
    sync_items,
    system_patterns,
)
from homeport.store.uids import new_uid
from homeport.sync.document import version_key

__all__ = [
    "ITEM_ORDER",
    "TABLES",
    "TAGGED",
    "Item",
    "Known",
    "Local",
    "deleted_unsynced",
    "doc_path",
    "last_view",
    "read_local",
    "versions_of",
]

TABLES = {"decision": decisions, "progress": progress, "system_pattern": system_patterns, "custom_data": custom_data}
_FIELDS = {
    "decision": ("summary", "rationale", "implementation_details"),
    "progress": ("status", "description", "parent"),
    "system_pattern": ("name", "description"),
    "custom_data": ("category", "key", "value"),
    "product_context": ("content",),
    "active_context": ("content",),
}
TAGGED = ("decision", "system_pattern")
# Parents before children, targets of links before their sources do not matter (links go last).
ITEM_ORDER = ("product_context", "active_context", "decision", "system_pattern", "custom_data", "progress")
Item = tuple[str, int]


def doc_path(item_type: str, key: str) -> str:
    """`decision/K/W/<uid>.json`: two levels of 32 directories (the key's last characters, which are random
    in a ULID and a digest), so a commit that changes a few of 10,000 items writes a few small trees, not
    one tree of 10,000 entries (measured: 400 KiB of new objects a sync, flat)."""
    return f"{item_type}/{key[-1]}/{key[-2]}/{key}.json"


@dataclass
class Known:
    """A row of `sync_items`."""

    doc: str
    item_type: str
    item_id: int | None
    digest: str
    clocks: str


@dataclass
class Local:
    """Every item of the store as a view, keyed by (type, id), and the file key each has or will get."""

    views: dict[Item, dict[str, Any]]
    keys: dict[Item, str]
    digests: dict[Item, str]
    known: dict[str, Known] = field(default_factory=dict)
    by_key: dict[str, Item] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_key = {key: item for item, key in self.keys.items()}

    def item_of(self, key: str) -> Item | None:
        row = self.known.get(key)
        if row is not None and row.item_id is not None and (row.item_type, row.item_id) in self.views:
            return row.item_type, row.item_id
        return self.by_key.get(key)  # an item that has no row yet


def _natural_key(item_type: str, *parts: str) -> str:
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:32]
    return f"{'cd' if item_type == 'custom_data' else 'sp'}-{digest}"


def read_local(conn: Connection, only: set[Item] | None = None, keys: dict[Item, str] | None = None) -> Local:
    """Every item of the store as a view (its versions left out: `versions_of` reads them for the few that changed).

    With `only` and `keys` (every item's file key, as an earlier read knew them), the views and digests of
    those items alone, read with queries narrowed to them: what a sync needs after applying a few files to
    a large store.
    """
    narrow = only is not None and keys is not None

    def where(type_column: Any, id_column: Any) -> Any:
        if not narrow:
            return true()
        assert only is not None
        by_type: dict[str, list[int]] = defaultdict(list)
        for t, i in only:
            by_type[t].append(i)
        return or_(false(), *((type_column == t) & id_column.in_(ids) for t, ids in by_type.items()))

    if narrow:
        known: dict[str, Known] = {}
    else:
        known = {
            r.doc: Known(r.doc, r.item_type, r.item_id, r.digest, r.clocks) for r in conn.execute(select(sync_items))
        }
    keyed = {(k.item_type, k.item_id): k.doc for k in known.values() if k.item_id is not None}
    uids: dict[Item, str] = {
        (t, i): u
        for t, i, u in conn.execute(select(item_uids).where(where(item_uids.c.item_type, item_uids.c.item_id)))
    }
    tags: dict[Item, list[str]] = defaultdict(list)
    tag_rows = select(item_tags.c.item_type, item_tags.c.item_id, item_tags.c.tag).where(
        where(item_tags.c.item_type, item_tags.c.item_id)
    )
    for t, i, tag in conn.execute(tag_rows):
        tags[(t, i)].append(tag)
    c = item_versions.c
    vmax: dict[Item, int] = {
        (t, i): n
        for t, i, n in conn.execute(
            select(c.item_type, c.item_id, func.max(c.version))
            .where(where(c.item_type, c.item_id))
            .group_by(c.item_type, c.item_id)
        )
    }
    rows: dict[Item, dict[str, Any]] = {}
    for item_type, table in TABLES.items():
        chosen = [i for t, i in only or () if t == item_type]
        if narrow and not chosen:
            continue
        for r in conn.execute(select(table).where(table.c.id.in_(chosen) if narrow else true())):
            rows[(item_type, r.id)] = dict(r._mapping)
    for r in conn.execute(select(contexts)):
        rows[(f"{r.kind}_context", CONTEXT_ID)] = {
            "content": json.loads(r.content),
            "updated_at": r.updated_at,
            "created_at": None,
            "version": r.version,
        }
    if narrow:
        assert keys is not None
        return _views_of(conn, rows, uids, tags, vmax, keys, known, only, where)
    keys = {}
    taken = set(known)
    for item, row in rows.items():
        item_type = item[0]
        key = keyed.get(item)
        if key is None:
            if item_type in CONTEXT_TYPES:
                key = item_type
            elif item_type in ("decision", "progress"):
                key = uids.get(item) or new_uid()
            else:
                parts = (row["category"], row["key"]) if item_type == "custom_data" else (row["name_key"],)
                key = _natural_key(item_type, *parts)
                holder = known.get(key)
                if holder is not None and holder.item_id is not None and (holder.item_type, holder.item_id) in rows:
                    key = _natural_key(item_type, *parts, uids.get(item) or new_uid())  # renamed into a taken name
            taken.add(key)
        keys[item] = key
    return _views_of(conn, rows, uids, tags, vmax, keys, known, only, where)


def _views_of(
    conn: Connection,
    rows: dict[Item, dict[str, Any]],
    uids: dict[Item, str],
    tags: dict[Item, list[str]],
    vmax: dict[Item, int],
    keys: dict[Item, str],
    known: dict[str, Known],
    only: set[Item] | None,
    where: Any,
) -> Local:
    views: dict[Item, dict[str, Any]] = {}
    for item, row in rows.items():
        if only is not None and item not in only:
            continue
        item_type = item[0]
        if item_type == "progress":
            fields = {
                "status": row["status"],
                "description": row["description"],
                "parent": keys.get(("progress", row["parent_id"])) if row["parent_id"] is not None else None,
            }
        elif item_type == "custom_data":
            fields = {"category": row["category"], "key": row["key"], "value": json.loads(row["value"])}
        else:
            fields = {name: row[name] for name in _FIELDS[item_type]}
        views[item] = {
            "uid": uids.get(item),
            "fields": fields,
            "tags": sorted(tags.get(item, []), key=lambda t: (t.casefold(), t)) if item_type in TAGGED else None,
            "links": {},
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
            "versions": {},
            "_version": row.get("version") or vmax.get(item, 0),
        }
    for r in conn.execute(select(links).where(where(links.c.source_type, links.c.source_id))):
        source, target = (r.source_type, r.source_id), (r.target_type, r.target_id)
        if source in views and target in keys:
            views[source]["links"][f"{r.relationship}\t{r.target_type}\t{keys[target]}"] = r.description
    digests = {item: _digest(view) for item, view in views.items()}
    return Local(views, keys, digests, known)


def _digest(view: dict[str, Any]) -> str:
    return hashlib.sha256(dump_json(view).encode("utf-8")).hexdigest()


def versions_of(conn: Connection, items: Iterable[Item]) -> dict[Item, dict[str, dict[str, Any]]]:
    """The versions of many items as files hold them, keyed by `document.version_key`: a query per 500 items."""
    out: dict[Item, dict[str, dict[str, Any]]] = {}
    by_type: dict[str, list[int]] = defaultdict(list)
    for item_type, item_id in items:
        out[(item_type, item_id)] = {}
        if item_type in TABLES:
            by_type[item_type].append(item_id)
    c = item_versions.c
    for item_type, ids in by_type.items():
        for start in range(0, len(ids), 500):
            chosen = ids[start : start + 500]
            rows = conn.execute(select(item_versions).where(c.item_type == item_type, c.item_id.in_(chosen)))
            for r in rows:
                writer = None
                if r.principal is not None:
                    writer = {
                        "principal": r.principal,
                        "client": r.client,
                        "client_version": r.client_version,
                        "tool": r.tool,
                    }
                entry = {"fields": json.loads(r.fields), "deleted": bool(r.deleted), "at": r.written_at, "by": writer}
                out[(item_type, r.item_id)][version_key(entry)] = entry
    return out


def deleted_unsynced(conn: Connection, local: Local, since: str) -> tuple[list[Item], str]:
    """Items created and deleted since the last sync (their delete written after `since`, their id unknown to
    the sync): only their versions remain, and they travel too. Returns them and the new `since`.

    `since` rather than "every deleted id the sync does not know": an item deleted here and brought back by a
    newer edit elsewhere is written again under a new id, and its old id must not look unsynced.
    """
    known = {(k.item_type, k.item_id) for k in local.known.values()}
    c = item_versions.c
    rows = list(
        conn.execute(select(c.item_type, c.item_id, c.written_at).where(c.deleted.is_(True), c.written_at > since))
    )
    mark = max((r.written_at for r in rows), default=since)
    found = sorted({(t, i) for t, i, _ in rows if (t, i) not in known and (t, i) not in local.views})
    return found, mark


def last_view(item_type: str, history: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A view of an item that no longer exists, from its newest version."""
    empty: dict[str, Any] = {"fields": {}, "at": None}
    newest: dict[str, Any] = max(history.values(), key=lambda v: str(v["at"]), default=empty)
    fields: dict[str, Any] = dict(newest["fields"])
    tags = fields.pop("tags", None)
    fields.pop("parent_id", None)
    if item_type == "progress":
        fields["parent"] = None
    return {
        "uid": None,
        "fields": {name: fields.get(name) for name in _FIELDS[item_type]},
        "tags": tags if item_type in TAGGED else None,
        "links": {},
        "versions": {},
        "created_at": newest["at"],
        "updated_at": newest["at"],
    }
