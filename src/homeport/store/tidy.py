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

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, func, insert, select, update

from homeport.errors import ChangesetConflictError, ChangesetGuardError, InvalidItemError, ItemNotFoundError
from homeport.store import tidy_operations as ops
from homeport.store._common import dump_json, load_json, now, row_dict
from homeport.store.database import Store
from homeport.store.lifecycle import TIDY_TYPES, count_items, state_of, write_state
from homeport.store.provenance import current_writer
from homeport.store.schema import changesets
from homeport.store.tags import tags_of
from homeport.store.tidy_proposals import KINDS, cited_stale_entries, find_entries

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

OPERATIONS = ops.OPERATIONS
GUARD_SHARE = 0.05  # a changeset may touch at most this share of the items without `force`
Key = ops.Key


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
    # Found in a read (seconds on 10,000 items must not hold the writers back); an item that changes before
    # the apply no longer has the hash taken here, and the apply is refused.
    with store.read() as conn:
        entries = find_entries(conn, scope=scope, kinds=wanted, stale_days=stale_days)
        if "stale" in wanted:
            entries += cited_stale_entries(stale_citations, {k for e in entries for k in ops.keys_of([e])}, scope)
        for number, entry in enumerate(entries, start=1):
            entry["id"] = number
        hashes = {ops.name_of(k): item_hash(conn, k) for k in ops.keys_of(entries, every=True)}
    with store.write() as conn:
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
            ).inserted_primary_key[0]  # type: ignore[index]  # an INSERT of one row always has its key
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
            operations = [ops.checked_operation(conn, op) for op in add]
            writer = current_writer()
            entry: dict[str, Any] = {
                "id": max(by_id, default=0) + 1,
                "kind": "manual",
                "reason": (reason or "").strip() or f"added by {writer.principal if writer else 'a reviewer'}",
                "evidence": {},
                "items": [{"type": t, "id": i} for t, i in ops.keys_of([{"operations": operations}])],
                "operations": operations,
                "accepted": True,
            }
            entries.append(entry)
            for key in ops.keys_of([entry]):
                hashes.setdefault(ops.name_of(key), item_hash(conn, key))
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
        named = ops.keys_of(entries)
        changed = [k for k in named if item_hash(conn, k) != hashes.get(ops.name_of(k))]
        if changed:
            raise ChangesetConflictError(
                f"changeset {changeset_id} was not applied: {ops.names(changed)} changed since it was proposed; "
                "propose again (propose_cleanup) to review the memory as it is now"
            )
        if not force:
            _guard(conn, changeset_id, named)
        affected = sorted({*named, *ops.neighbours(conn, named)})
        before = {ops.name_of(k): ops.snapshot(conn, k) for k in affected}
        for entry in entries:
            for op in entry["operations"]:
                ops.run(conn, changeset_id, op)
        after = {ops.name_of(k): ops.snapshot_hash(ops.snapshot(conn, k), rows=False) for k in affected}
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
        keys = [ops.key_named(name) for name in before]
        if not force:
            changed = [k for k in keys if ops.snapshot_hash(ops.snapshot(conn, k), rows=False) != after[ops.name_of(k)]]
            if changed:
                later = _later_changesets(conn, changeset_id)
                hint = f"revert changeset {', '.join(map(str, later))} first, or " if later else ""
                raise ChangesetConflictError(
                    f"changeset {changeset_id} was not reverted: {ops.names(changed)} changed since it was applied; "
                    f"{hint}pass force=true to put the earlier states back anyway"
                )
        ops.restore_links(conn, keys, [link for snap in before.values() for link in snap["links"]])
        for key in keys:
            snap = before[ops.name_of(key)]
            write_state(conn, key[0], key[1], ops.state_row(snap["state"]))
            if snap["row"] is not None and tags_of(conn, key[0], [key[1]]).get(key[1], []) != snap["tags"]:
                ops.write_tags(conn, key, snap["tags"])
        writer = current_writer()
        conn.execute(
            update(changesets)
            .where(changesets.c.id == changeset_id)
            .values(status="reverted", reverted_at=now(), reverted_by=writer.principal if writer else None)
        )
        return _public(_row(conn, changeset_id))


def item_hash(conn: Connection, key: Key) -> str:
    """The version hash of an item: its row, tags, links and lifecycle state (a missing item hashes too)."""
    return ops.snapshot_hash(ops.snapshot(conn, key), rows=True)


# -- checks --------------------------------------------------------------------------------------


def _guard(conn: Connection, changeset_id: int, named: Sequence[Key]) -> None:
    pinned = [k for k in named if (state_of(conn, *k) or {}).get("pinned")]
    if pinned:
        raise ChangesetGuardError(
            f"changeset {changeset_id} touches pinned {ops.names(pinned)}; reject those entries, unpin the items "
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
            "items": len(ops.keys_of(accepted)),
            **counts,
        },
    }
    if entries:
        out["entries"] = found
    return out
