"""Files of the sync ref applied to the store: each item's row, tags, links, search entry and versions.

Written directly, not through the tools' writes, which would add a version of their own for a value
that is no new write: the versions a file carries are inserted as they are (`versions_of` names them
by content, so the same write is never inserted twice). Items are found by the file key the store
knows, else by uid, natural key (custom data's category and key, a pattern's name) or kind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from homeport.errors import InvalidItemError
from homeport.store import search as search_index
from homeport.store._common import dump_json, now
from homeport.store.contexts import write_context
from homeport.store.custom_data import checked_custom_data
from homeport.store.database import insert_row
from homeport.store.decisions import checked_decision
from homeport.store.fields import MAX_LABEL_CHARS, MAX_TEXT_CHARS, check_text
from homeport.store.items import CONTEXT_ID, CONTEXT_TYPES, forget_item
from homeport.store.patterns import checked_pattern
from homeport.store.schema import contexts, custom_data, item_uids, item_versions, links, progress, system_patterns
from homeport.store.tags import set_tags
from homeport.store.uids import assign_uid
from homeport.sync.document import Doc, alive, live_links, live_tags
from homeport.sync.items import ITEM_ORDER, TABLES, TAGGED, Item, Local, versions_of

__all__ = ["Applied", "apply_docs"]


@dataclass
class Applied:
    """What applying files changed in the store: items written and removed, links skipped."""

    items: dict[str, Item | None] = field(default_factory=dict)  # file key -> the store's item (None: deleted)
    removed: dict[str, int] = field(default_factory=dict)  # file key -> the id of the item a tombstone removed
    skipped: list[str] = field(default_factory=list)


def apply_docs(conn: Connection, local: Local, docs: dict[str, Doc]) -> Applied:
    """Write every file of `docs` (key -> file) to the store, inside the open transaction.

    `local` is the store as `read_local` saw it before; items are found by the file key it knows, else
    by uid, natural key or kind.
    """
    result = Applied()
    ids = result.items
    for key, doc in sorted(docs.items(), key=lambda kv: (ITEM_ORDER.index(kv[1]["type"]), kv[0])):
        item = _find(conn, local, key, doc)
        if not alive(doc):
            if item is not None:
                _remove(conn, item)
                result.removed[key] = item[1]
            ids[key] = None
            continue
        ids[key] = _write(conn, item, doc)
    resolve = _resolver(local, ids)
    have = versions_of(conn, [item for item in ids.values() if item is not None])
    for key, doc in docs.items():
        item = ids.get(key)
        if item is None:
            continue
        if doc["type"] == "progress":
            _set_parent(conn, item[1], resolve(doc["fields"].get("parent", {}).get("v")), result, key)
        _insert_missing_versions(conn, item, doc, set(have[item]))
    for key, doc in docs.items():
        item = ids.get(key)
        if item is not None:
            _set_links(conn, item, doc, resolve, result, key)
    return result


def _resolver(local: Local, ids: dict[str, Item | None]) -> Any:
    def resolve(key: str | None) -> Item | None:
        if key is None:
            return None
        if key in ids:
            return ids[key]
        return local.item_of(key)

    return resolve


def _find(conn: Connection, local: Local, key: str, doc: Doc) -> Item | None:
    item_type = doc["type"]
    item = local.item_of(key)
    if item is not None:
        return item
    if item_type in CONTEXT_TYPES:
        kind = item_type.removesuffix("_context")
        exists = conn.execute(select(contexts.c.kind).where(contexts.c.kind == kind)).first()
        return (item_type, CONTEXT_ID) if exists else None
    uid = doc.get("uid")
    if uid:
        found = conn.execute(
            select(item_uids.c.item_id).where(item_uids.c.uid == uid, item_uids.c.item_type == item_type)
        ).scalar()
        if found is not None:
            return item_type, found
    fields = {name: reg["v"] for name, reg in doc["fields"].items()}
    if item_type == "custom_data":
        found = conn.execute(
            select(custom_data.c.id).where(
                custom_data.c.category == fields.get("category"), custom_data.c.key == fields.get("key")
            )
        ).scalar()
        return (item_type, found) if found is not None else None
    if item_type == "system_pattern":
        found = conn.execute(
            select(system_patterns.c.id).where(system_patterns.c.name_key == str(fields.get("name", "")).casefold())
        ).scalar()
        return (item_type, found) if found is not None else None
    return None


def _remove(conn: Connection, item: Item) -> None:
    item_type, item_id = item
    forget_item(conn, item_type, item_id)
    if item_type in CONTEXT_TYPES:
        conn.execute(delete(contexts).where(contexts.c.kind == item_type.removesuffix("_context")))
        return
    if item_type == "progress":  # a child written elsewhere after this delete stays, without its parent
        conn.execute(update(progress).where(progress.c.parent_id == item_id).values(parent_id=None))
    table = TABLES[item_type]
    conn.execute(delete(table).where(table.c.id == item_id))


def _write(conn: Connection, item: Item | None, doc: Doc) -> Item:
    """The file's fields, tags and uid on the store's item (created when missing); returns it."""
    item_type = doc["type"]
    f = {name: reg["v"] for name, reg in doc["fields"].items()}
    updated = doc["updated_at"] or now()
    if item_type in CONTEXT_TYPES:
        content = f.get("content") or {}
        current = None
        if item is not None:
            kind = item_type.removesuffix("_context")
            current = conn.execute(select(contexts.c.content).where(contexts.c.kind == kind)).scalar()
        if current is None or json.loads(current) != content:
            write_context(conn, item_type.removesuffix("_context"), content, changed_at=updated)
        return item_type, CONTEXT_ID
    title, body, category = "", "", None
    if item_type == "decision":
        summary = checked_decision(f.get("summary"), f.get("rationale"), f.get("implementation_details"))
        values = {
            "summary": summary,
            "rationale": f.get("rationale"),
            "implementation_details": f.get("implementation_details"),
        }
        title, body = summary, "\n".join(x for x in (values["rationale"], values["implementation_details"]) if x)
    elif item_type == "progress":
        status, description = (f.get("status") or "").strip(), (f.get("description") or "").strip()
        if not status or not description:
            raise InvalidItemError(f"progress file {doc['key']} has an empty status or description")
        check_text(status, "progress status", MAX_LABEL_CHARS["status"])
        check_text(description, "progress description", MAX_TEXT_CHARS)
        values = {"status": status, "description": description}
        title, body = description[:120], f"{description}\n{status}"
    elif item_type == "system_pattern":
        name, description = checked_pattern(f.get("name"), f.get("description"))
        values = {"name": name, "name_key": name.casefold(), "description": description}
        title, body = name, description
    else:
        category, key, stored = checked_custom_data(f.get("category"), f.get("key"), f.get("value"))
        values = {"category": category, "key": key, "value": stored}
        value = f.get("value")
        title = f"{category}: {key}"
        body = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    table = TABLES[item_type]
    values["updated_at"] = updated
    if item is None:
        values["created_at"] = doc["created_at"] or updated
        new_id = insert_row(conn, insert(table).values(**values))
        item = (item_type, new_id)
    else:
        conn.execute(update(table).where(table.c.id == item[1]).values(**values))
    if doc.get("uid"):
        current_uid = conn.execute(
            select(item_uids.c.uid).where(item_uids.c.item_type == item_type, item_uids.c.item_id == item[1])
        ).scalar()
        if current_uid != doc["uid"]:
            assign_uid(conn, item_type, item[1], doc["uid"])
    tags: list[str] = []
    if item_type in TAGGED:
        tags = set_tags(conn, item_type, item[1], live_tags(doc))
    search_index.index_item(
        conn, item_type, item[1], title=title, body=body, updated_at=updated, tags=tags, category=category
    )
    return item


def _set_parent(conn: Connection, item_id: int, parent: Item | None, result: Applied, key: str) -> None:
    parent_id = parent[1] if parent is not None else None
    if parent_id is not None:  # concurrent moves can make a loop: the entry stays where it is
        cursor: int | None = parent_id
        while cursor is not None:
            if cursor == item_id:
                result.skipped.append(f"{key}: parent would make a loop")
                return
            cursor = conn.execute(select(progress.c.parent_id).where(progress.c.id == cursor)).scalar()
    conn.execute(update(progress).where(progress.c.id == item_id).values(parent_id=parent_id))


def _insert_missing_versions(conn: Connection, item: Item, doc: Doc, have: set[str]) -> None:
    item_type, item_id = item
    if item_type not in TABLES or not doc["versions"]:
        return
    missing = sorted(((k, v) for k, v in doc["versions"].items() if k not in have), key=lambda kv: (kv[1]["at"], kv[0]))
    if not missing:
        return
    top = conn.execute(
        select(func.coalesce(func.max(item_versions.c.version), 0)).where(
            item_versions.c.item_type == item_type, item_versions.c.item_id == item_id
        )
    ).scalar_one()
    rows = []
    for n, (_, v) in enumerate(missing, start=top + 1):
        by = v["by"] or {}
        rows.append(
            {
                "item_type": item_type,
                "item_id": item_id,
                "version": n,
                "fields": dump_json(v["fields"]),
                "deleted": bool(v["deleted"]),
                "principal": by.get("principal"),
                "client": by.get("client"),
                "client_version": by.get("client_version"),
                "tool": by.get("tool"),
                "written_at": v["at"],
            }
        )
    conn.execute(insert(item_versions), rows)


def _set_links(conn: Connection, item: Item, doc: Doc, resolve: Any, result: Applied, key: str) -> None:
    source_type, source_id = item
    wanted: dict[tuple[str, str, int], str | None] = {}
    for link_key, description in live_links(doc).items():
        relationship, target_type, target_key = link_key.split("\t", 2)
        target = resolve(target_key)
        if target is None or target[0] != target_type:
            result.skipped.append(f"{key}: link {relationship} to a {target_type} that is deleted here")
            continue
        wanted[(relationship, target_type, target[1])] = description
    c = links.c
    current = {
        (r.relationship, r.target_type, r.target_id): (r.id, r.description)
        for r in conn.execute(select(links).where(c.source_type == source_type, c.source_id == source_id))
    }
    for edge, (link_id, description) in current.items():
        if edge not in wanted:
            conn.execute(delete(links).where(c.id == link_id))
        elif wanted[edge] != description:
            conn.execute(update(links).where(c.id == link_id).values(description=wanted[edge]))
    stamp = doc["updated_at"] or now()
    for (relationship, target_type, target_id), description in wanted.items():
        if (relationship, target_type, target_id) not in current:
            conn.execute(
                insert(links).values(
                    source_type=source_type,
                    source_id=source_id,
                    target_type=target_type,
                    target_id=target_id,
                    relationship=relationship,
                    description=description,
                    created_at=stamp,
                )
            )
