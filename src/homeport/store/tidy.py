"""Tidying the memory as a change you read, apply and revert exactly (table `changesets`).

Other memories clean up destructively (consolidation that deletes and re-adds, contradicted facts
deleted), and users have lost most of their memory in a day. Here a cleanup is a changeset:

    proposed = propose_cleanup(store)                      # entries with reason, evidence, operations
    amend_changeset(store, proposed["id"], reject=[2])      # a person or an agent decides
    apply_changeset(store, proposed["id"])                  # refused whole if any item changed since
    revert_changeset(store, proposed["id"])                 # the exact earlier states, tags and links

The one rule: **nothing is deleted**. The operations (merge, supersede, archive, relink, retag)
change only an item's lifecycle state (`homeport.store.lifecycle`), its links and its tags; an
archived or merged item keeps its row and its history, and leaves search, get_context and the
default lists. Only `purge_item` removes an item's text, and only after an explicit delete.

`apply` compares each item's version hash (its row, tags, links and state) with the one taken when
the item entered the changeset, and refuses the whole changeset if any differs. It keeps the exact
tags, links and state rows it replaces; `revert` refuses if they changed since the apply (a later
changeset, an edit), then writes them back: link rows under their own ids, so an export after the
revert is byte for byte the export before the apply. A guard refuses a changeset that touches a
pinned item or more than 5 % of the items unless `force` is given.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, delete, func, insert, or_, select, update

from homeport.errors import ChangesetConflictError, ChangesetGuardError, InvalidItemError, ItemNotFoundError
from homeport.store import search as search_index
from homeport.store import versions
from homeport.store._common import dump_json, load_json, now, row_dict
from homeport.store.database import Store
from homeport.store.lifecycle import TABLES, TIDY_TYPES, change_state, count_items, state_of, write_state
from homeport.store.links import insert_link
from homeport.store.provenance import current_writer
from homeport.store.schema import changesets, links
from homeport.store.tags import set_tags, tags_of
from homeport.store.tidy_proposals import KINDS, SUPERSEDING, cited_stale_entries, find_entries

__all__ = [
    "GUARD_SHARE",
    "OPERATIONS",
    "amend_changeset",
    "apply_changeset",
    "get_changeset",
    "item_hash",
    "list_changesets",
    "propose_cleanup",
    "revert_changeset",
]

OPERATIONS = ("merge", "supersede", "archive", "relink", "retag")
GUARD_SHARE = 0.05  # a changeset may touch at most this share of the items without `force`
_TAGGED = ("decision", "system_pattern")
Key = tuple[str, int]


def propose_cleanup(
    store: Store,
    *,
    scope: str | None = None,
    kinds: Sequence[str] | None = None,
    stale_days: int = 90,
    stale_citations: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Find duplicates, contradictions, superseded and stale items; store them as a proposed changeset.

    `stale_citations`: items whose citations to code are changed or missing (`{type, id, title,
    citation_status, citations}`, checked against the work tree by the caller); each becomes a stale
    entry with an archive operation left for the reviewer to accept.

    Raises:
        InvalidItemError: an unknown scope or kind, or stale_days below 1.
    """
    if scope not in (None, "all", *TIDY_TYPES):
        raise InvalidItemError(f"scope {scope!r} is not an item type; use all or one of {', '.join(TIDY_TYPES)}")
    wanted = list(KINDS if kinds is None else kinds)
    unknown = sorted(set(wanted) - set(KINDS))
    if unknown:
        raise InvalidItemError(f"unknown kind(s) {', '.join(unknown)}; use any of {', '.join(KINDS)}")
    if stale_days < 1:
        raise InvalidItemError(f"stale_days {stale_days} is below 1; pass how many days untouched make an entry stale")
    with store.write() as conn:
        entries = find_entries(conn, scope=scope, kinds=wanted, stale_days=stale_days)
        if "stale" in wanted:
            entries += cited_stale_entries(stale_citations, {k for e in entries for k in _keys_of([e])}, scope)
        for number, entry in enumerate(entries, start=1):
            entry["id"] = number
        hashes = {_name(k): item_hash(conn, k) for k in _keys_of(entries, every=True)}
        writer = current_writer()
        changeset_id = int(
            conn.execute(
                insert(changesets).values(
                    status="proposed",
                    scope=scope or "all",
                    entries=dump_json(entries),
                    hashes=dump_json(hashes),
                    created_at=now(),
                    created_by=writer.principal if writer else None,
                )
            ).inserted_primary_key[0]
        )
        return _public(_row(conn, changeset_id))


def get_changeset(store: Store | None, changeset_id: int) -> dict[str, Any]:
    """One changeset with its entries, each with its reason, evidence, operations and whether it is accepted.

    Raises:
        ItemNotFoundError: no changeset has that id.
    """
    if store is None:
        raise ItemNotFoundError(f"changeset {changeset_id} does not exist; the workspace has no memory yet")
    with store.read() as conn:
        return _public(_row(conn, changeset_id))


def list_changesets(store: Store | None, *, status: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """Changesets, newest first, without their entries (counts instead)."""
    if store is None:
        return []
    stmt = select(changesets).order_by(changesets.c.id.desc()).limit(max(1, min(limit, 200)))
    if status is not None:
        stmt = stmt.where(changesets.c.status == status)
    with store.read() as conn:
        return [_public(row_dict(r), entries=False) for r in conn.execute(stmt)]


def amend_changeset(
    store: Store,
    changeset_id: int,
    *,
    accept: Sequence[int] = (),
    reject: Sequence[int] = (),
    add: Sequence[dict[str, Any]] = (),
    reason: str | None = None,
) -> dict[str, Any]:
    """Accept or reject entries of a proposed changeset, or add operations of your own (one entry).

    Raises:
        InvalidItemError: the changeset is not proposed, an entry id it does not have, an entry with
            no operation to accept (a contradiction: add the operation you decide on), a malformed
            operation.
        ItemNotFoundError: no changeset has that id, or an added operation names a missing item.
    """
    with store.write() as conn:
        cs = _row(conn, changeset_id)
        _require_status(cs, "proposed", "amend")
        entries = load_json(cs["entries"])
        by_id = {e["id"]: e for e in entries}
        missing = sorted({*accept, *reject} - set(by_id))
        if missing:
            raise InvalidItemError(
                f"changeset {changeset_id} has no entry {', '.join(map(str, missing))}; its entries are "
                f"1 to {len(entries)}"
            )
        both = sorted(set(accept) & set(reject))
        if both:
            raise InvalidItemError(f"entry {', '.join(map(str, both))} is both accepted and rejected; pick one")
        for number in accept:
            if not by_id[number]["operations"]:
                raise InvalidItemError(
                    f"entry {number} ({by_id[number]['kind']}) has no operation to accept; decide what to do and "
                    "add it (add=[{op: supersede, item: ..., by: ...}])"
                )
            by_id[number]["accepted"] = True
        for number in reject:
            by_id[number]["accepted"] = False
        hashes = load_json(cs["hashes"])
        if add:
            operations = [_checked_operation(conn, op) for op in add]
            writer = current_writer()
            entry = {
                "id": max(by_id, default=0) + 1,
                "kind": "manual",
                "reason": (reason or "").strip() or f"added by {writer.principal if writer else 'a reviewer'}",
                "evidence": {},
                "items": [{"type": t, "id": i} for t, i in _keys_of([{"operations": operations}])],
                "operations": operations,
                "accepted": True,
            }
            entries.append(entry)
            for key in _keys_of([entry]):
                hashes.setdefault(_name(key), item_hash(conn, key))
        conn.execute(
            update(changesets)
            .where(changesets.c.id == changeset_id)
            .values(entries=dump_json(entries), hashes=dump_json(hashes))
        )
        return _public(_row(conn, changeset_id))


def apply_changeset(store: Store, changeset_id: int, *, force: bool = False) -> dict[str, Any]:
    """Carry out the accepted entries of a proposed changeset, all or nothing.

    Raises:
        ChangesetConflictError: an item changed since it entered the changeset (propose again).
        ChangesetGuardError: a pinned item, or more than 5 % of the items, without `force`.
        InvalidItemError: the changeset is not proposed, or accepts no operation.
        ItemNotFoundError: no changeset has that id.
    """
    with store.write() as conn:
        cs = _row(conn, changeset_id)
        _require_status(cs, "proposed", "apply")
        entries = [e for e in load_json(cs["entries"]) if e["accepted"] and e["operations"]]
        if not entries:
            raise InvalidItemError(
                f"changeset {changeset_id} accepts no operation; accept entries with amend_changeset first"
            )
        hashes = load_json(cs["hashes"])
        named = _keys_of(entries)
        changed = [k for k in named if item_hash(conn, k) != hashes.get(_name(k))]
        if changed:
            raise ChangesetConflictError(
                f"changeset {changeset_id} was not applied: {_names(changed)} changed since it was proposed; "
                "propose again (propose_cleanup) to review the memory as it is now"
            )
        if not force:
            _guard(conn, changeset_id, named)
        affected = sorted({*named, *_neighbours(conn, named)})
        before = {_name(k): _snapshot(conn, k) for k in affected}
        for entry in entries:
            for op in entry["operations"]:
                _run(conn, changeset_id, op)
        after = {_name(k): _hash(_snapshot(conn, k), rows=False) for k in affected}
        writer = current_writer()
        conn.execute(
            update(changesets)
            .where(changesets.c.id == changeset_id)
            .values(
                status="applied",
                before=dump_json(before),
                after=dump_json(after),
                applied_at=now(),
                applied_by=writer.principal if writer else None,
            )
        )
        return _public(_row(conn, changeset_id))


def revert_changeset(store: Store, changeset_id: int, *, force: bool = False) -> dict[str, Any]:
    """Put back exactly what an applied changeset replaced: lifecycle states, tags and links (same ids).

    Raises:
        ChangesetConflictError: an item it touched changed since it was applied (revert the later
            changeset first), unless `force`, which puts the earlier states back anyway.
        InvalidItemError: the changeset is not applied.
        ItemNotFoundError: no changeset has that id.
    """
    with store.write() as conn:
        cs = _row(conn, changeset_id)
        _require_status(cs, "applied", "revert")
        before: dict[str, dict[str, Any]] = load_json(cs["before"])
        after: dict[str, str] = load_json(cs["after"])
        keys = [_key(name) for name in before]
        if not force:
            changed = [k for k in keys if _hash(_snapshot(conn, k), rows=False) != after[_name(k)]]
            if changed:
                later = _later_changesets(conn, changeset_id)
                hint = f"revert changeset {', '.join(map(str, later))} first, or " if later else ""
                raise ChangesetConflictError(
                    f"changeset {changeset_id} was not reverted: {_names(changed)} changed since it was applied; "
                    f"{hint}pass force=true to put the earlier states back anyway"
                )
        _restore_links(conn, keys, [link for snap in before.values() for link in snap["links"]])
        for key in keys:
            snap = before[_name(key)]
            write_state(conn, key[0], key[1], _state_row(snap["state"]))
            if snap["row"] is not None and tags_of(conn, key[0], [key[1]]).get(key[1], []) != snap["tags"]:
                _write_tags(conn, key, snap["tags"])
        writer = current_writer()
        conn.execute(
            update(changesets)
            .where(changesets.c.id == changeset_id)
            .values(status="reverted", reverted_at=now(), reverted_by=writer.principal if writer else None)
        )
        return _public(_row(conn, changeset_id))


def item_hash(conn: Connection, key: Key) -> str:
    """The version hash of an item: its row, tags, links and lifecycle state (a missing item hashes too)."""
    return _hash(_snapshot(conn, key), rows=True)


# -- operations ----------------------------------------------------------------------------------


def _run(conn: Connection, changeset_id: int, op: dict[str, Any]) -> None:
    kind = op["op"]
    item = _key_of(op.get("item"))
    if kind == "archive":
        change_state(conn, *item, archived=True, changeset_id=changeset_id)
    elif kind == "supersede":
        by = _key_of(op["by"])
        change_state(conn, *item, superseded_type=by[0], superseded_id=by[1], changeset_id=changeset_id)
        if not _linked(conn, item, by, tuple(SUPERSEDING)):
            insert_link(conn, item[0], item[1], by[0], by[1], "superseded_by")
    elif kind == "merge":
        into = _key_of(op["into"])
        for link in _links_of(conn, [item]):
            _move_link(conn, row_dict(link), item, into)
        if not _linked(conn, item, into, ("merged_into",)):
            insert_link(conn, item[0], item[1], into[0], into[1], "merged_into")
        change_state(
            conn, *item, archived=True, superseded_type=into[0], superseded_id=into[1], changeset_id=changeset_id
        )
        if item[0] == into[0] and item[0] in _TAGGED:
            ours = tags_of(conn, into[0], [into[1]]).get(into[1], [])
            theirs = tags_of(conn, item[0], [item[1]]).get(item[1], [])
            union = [*ours, *(t for t in theirs if t.casefold() not in {o.casefold() for o in ours})]
            if union != ours:
                _write_tags(conn, into, union)
    elif kind == "relink":
        found = conn.execute(select(links).where(links.c.id == op["link_id"])).first()
        if found is not None:
            _move_link(conn, row_dict(found), _key_of(op["from"]), _key_of(op["to"]))
    elif kind == "retag":
        _write_tags(conn, item, op["tags"])


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
            conn, *source, *target, link["relationship"], description=link["description"], created_at=link["created_at"]
        )


def _write_tags(conn: Connection, key: Key, tags: Sequence[str]) -> None:
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


def _restore_links(conn: Connection, keys: Sequence[Key], wanted: Iterable[dict[str, Any]]) -> None:
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


# -- checks --------------------------------------------------------------------------------------


def _checked_operation(conn: Connection, op: Any) -> dict[str, Any]:
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
            key = _key_of(op[name])
            _require(conn, key)
            out[name] = {"type": key[0], "id": key[1]}
    if kind == "merge" and (out["item"]["type"] != out["into"]["type"] or out["item"] == out["into"]):
        raise InvalidItemError("merge joins two different items of one type")
    if kind == "supersede" and out["item"] == out["by"]:
        raise InvalidItemError("an item cannot supersede itself")
    if kind == "retag" and out["item"]["type"] not in _TAGGED:
        raise InvalidItemError(f"only {' and '.join(_TAGGED)} items have tags")
    return out


def _require(conn: Connection, key: Key) -> None:
    table = TABLES[key[0]]
    if conn.execute(select(table.c.id).where(table.c.id == key[1])).first() is None:
        raise ItemNotFoundError(f"{key[0]} {key[1]} does not exist; find ids with search or the get_ tools")


def _guard(conn: Connection, changeset_id: int, named: Sequence[Key]) -> None:
    pinned = [k for k in named if (state_of(conn, *k) or {}).get("pinned")]
    if pinned:
        raise ChangesetGuardError(
            f"changeset {changeset_id} touches pinned {_names(pinned)}; reject those entries, unpin the items "
            "(set_item_lifecycle pinned=false), or pass force=true (--force in the shell)"
        )
    total = count_items(conn)
    if len(named) > GUARD_SHARE * total:
        raise ChangesetGuardError(
            f"changeset {changeset_id} touches {len(named)} of {total} items, more than {GUARD_SHARE:.0%}; "
            "review it and pass force=true (--force in the shell), or reject entries until it touches fewer"
        )


def _require_status(cs: dict[str, Any], wanted: str, doing: str) -> None:
    if cs["status"] != wanted:
        done = {"amend": "amended", "apply": "applied", "revert": "reverted"}[doing]
        hint = "; propose a new one with propose_cleanup" if wanted == "proposed" else ""
        raise InvalidItemError(
            f"changeset {cs['id']} is {cs['status']}; only {'an' if wanted == 'applied' else 'a'} {wanted} "
            f"changeset can be {done}{hint}"
        )


def _later_changesets(conn: Connection, changeset_id: int) -> list[int]:
    c = changesets.c
    found = conn.execute(select(c.id).where(c.status == "applied", c.id != changeset_id).order_by(c.id.desc()))
    return [r.id for r in found]


# -- snapshots -----------------------------------------------------------------------------------


def _snapshot(conn: Connection, key: Key) -> dict[str, Any]:
    table = TABLES[key[0]]
    row = conn.execute(select(table).where(table.c.id == key[1])).first()
    return {
        "row": row_dict(row) if row is not None else None,
        "tags": tags_of(conn, key[0], [key[1]]).get(key[1], []),
        "links": [row_dict(link) for link in _links_of(conn, [key])],
        "state": state_of(conn, *key),
    }


def _hash(snapshot: dict[str, Any], *, rows: bool) -> str:
    what = snapshot if rows else {k: v for k, v in snapshot.items() if k != "row"}
    return hashlib.sha256(dump_json(what).encode("utf-8")).hexdigest()


def _state_row(state: dict[str, Any] | None) -> dict[str, Any] | None:
    if state is None:
        return None
    return {k: v for k, v in state.items() if k not in ("item_type", "item_id")}


def _links_of(conn: Connection, keys: Sequence[Key]) -> list[Any]:
    if not keys:
        return []
    c = links.c
    ends = [((c.source_type == t) & (c.source_id == i)) | ((c.target_type == t) & (c.target_id == i)) for t, i in keys]
    return list(conn.execute(select(links).where(or_(*ends)).order_by(c.id)).all())


def _neighbours(conn: Connection, keys: Sequence[Key]) -> set[Key]:
    out: set[Key] = set()
    for link in _links_of(conn, keys):
        for end in ((link.source_type, link.source_id), (link.target_type, link.target_id)):
            if end[0] in TIDY_TYPES:
                out.add(end)
    return out


def _keys_of(entries: Iterable[dict[str, Any]], *, every: bool = False) -> list[Key]:
    """The items the entries' operations name (every=True: also those of entries without operations)."""
    seen: dict[Key, None] = {}
    for entry in entries:
        for op in entry["operations"]:
            for name in ("item", "into", "by", "from", "to"):
                if name in op:
                    seen.setdefault(_key_of(op[name]))
        if every:
            for ref in entry.get("items", ()):
                if ref["type"] in TIDY_TYPES:
                    seen.setdefault((ref["type"], ref["id"]))
    return list(seen)


def _key_of(ref: Any) -> Key:
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


def _name(key: Key) -> str:
    return f"{key[0]}:{key[1]}"


def _key(name: str) -> Key:
    item_type, _, number = name.partition(":")
    return (item_type, int(number))


def _names(keys: Sequence[Key]) -> str:
    shown = ", ".join(f"{t} {i}" for t, i in keys[:10])
    return shown + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")


# -- rows ----------------------------------------------------------------------------------------


def _row(conn: Connection, changeset_id: int) -> dict[str, Any]:
    row = conn.execute(select(changesets).where(changesets.c.id == changeset_id)).first()
    if row is None:
        newest = conn.execute(select(func.max(changesets.c.id))).scalar()
        hint = f"the newest is {newest}" if newest else "there is none yet: propose one with propose_cleanup"
        raise ItemNotFoundError(f"changeset {changeset_id} does not exist; {hint}")
    return row_dict(row)


def _public(cs: dict[str, Any], *, entries: bool = True) -> dict[str, Any]:
    found = load_json(cs["entries"])
    counts: dict[str, int] = {}
    for entry in found:
        counts[entry["kind"]] = counts.get(entry["kind"], 0) + 1
    accepted = [e for e in found if e["accepted"] and e["operations"]]
    out: dict[str, Any] = {
        "id": cs["id"],
        "status": cs["status"],
        "scope": cs["scope"],
        "created_at": cs["created_at"],
        "created_by": cs["created_by"],
        "applied_at": cs["applied_at"],
        "applied_by": cs["applied_by"],
        "reverted_at": cs["reverted_at"],
        "reverted_by": cs["reverted_by"],
        "counts": {
            "entries": len(found),
            "accepted": len(accepted),
            "operations": sum(len(e["operations"]) for e in accepted),
            "items": len(_keys_of(accepted)),
            **counts,
        },
    }
    if entries:
        out["entries"] = found
    return out
