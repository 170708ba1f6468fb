"""`homeport sync`: export the memory to its ref, fetch the remote's, merge, apply, push.

    with the store's write lock:
      export   every item whose digest changed gets its file rewritten, with a new clock on each changed
               field; one commit on the local ref (`refs/homeport/memory`)
    fetch      the remote's ref into refs/homeport/remotes/<remote>/memory
    merge      none needed when one side contains the other (push, or fast-forward); else each file that
               differs is merged (`document.merge`) and a merge commit with both parents is written
    apply      the files the local ref gained, written to the store in the transaction that moves the ref
    push       the local ref to the remote; a push that lost a race fetches and merges again; a host that
               refuses refs outside refs/heads/ gets the branch `homeport-memory` instead (remembered)

The work tree, the index and HEAD are never touched. A git lock file beside the repository's own
(`homeport-sync.lock` in the git directory) keeps two syncs of one clone (a hook and a person) apart.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets as random_ids
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock
from sqlalchemy import Connection, delete, insert, select, update

from homeport.errors import SyncError, SyncSecretError
from homeport.secret_scan import find_secrets
from homeport.store._common import now
from homeport.store.database import Store
from homeport.store.schema import sync_conflicts, sync_items, sync_state
from homeport.store.uids import new_uid
from homeport.sync.apply import apply_docs
from homeport.sync.clock import HybridClock, stamp_millis
from homeport.sync.document import Doc, decode, encode, max_clock, merge, record_local
from homeport.sync.items import Known, Local, deleted_unsynced, doc_path, last_view, read_local, versions_of
from homeport.sync.repository import Repository, find_repository

__all__ = ["DEFAULT_REF", "FALLBACK_BRANCH", "open_conflicts", "resolve_conflicts", "sync_memory"]

DEFAULT_REF = "refs/homeport/memory"
FALLBACK_BRANCH = "refs/heads/homeport-memory"
_MAX_ROUNDS = 5


def sync_memory(
    store: Store, root: Path, *, remote: str = "origin", ref: str = DEFAULT_REF, push: bool = True
) -> dict[str, Any]:
    """Sync the workspace's memory with `remote` through `ref`; returns what was exported, received, merged.

    Raises:
        SyncSecretError: an item to export holds a secret (nothing exported).
        SyncError: no repository, git missing, the remote unreachable or refusing the push.
    """
    _check_ref(ref)
    repo = find_repository(root)
    with FileLock(str(repo.git_dir / "homeport-sync.lock"), timeout=120):
        return _Sync(store, repo, remote, ref).run(push)


def open_conflicts(store: Store | None, limit: int = 20) -> dict[str, Any]:
    """The concurrent edits a sync settled that nobody has looked at yet: a count and the newest few."""
    if store is None:
        return {"count": 0, "items": []}
    with store.read() as conn:
        c = sync_conflicts.c
        rows = list(
            conn.execute(
                select(sync_conflicts, sync_items.c.item_type, sync_items.c.item_id)
                .join(sync_items, sync_items.c.doc == c.doc, isouter=True)
                .where(c.resolved_at.is_(None))
                .order_by(c.detected_at.desc(), c.doc, c.field)
            )
        )
    return {"count": len(rows), "items": [_conflict_public(r) for r in rows[:limit]]}


def resolve_conflicts(store: Store) -> dict[str, Any]:
    """Mark every open conflict as looked at: they leave the lists; the values stay in the items' history."""
    with store.write() as conn:
        c = sync_conflicts.c
        done = conn.execute(update(sync_conflicts).where(c.resolved_at.is_(None)).values(resolved_at=now())).rowcount
    return {"resolved": done}


def _conflict_public(r: Any) -> dict[str, Any]:
    return {
        "file": r.doc,
        "item_type": r.item_type,
        "item_id": r.item_id,
        "field": r.field,
        "kept_clock": r.won,
        "lost_clock": r.lost,
        "lost_value": json.loads(r.lost_value) if r.lost_value is not None else None,
        "detected_at": r.detected_at,
    }


def _check_ref(ref: str) -> None:
    if not re.fullmatch(r"refs/[A-Za-z0-9._/-]+", ref) or ".." in ref or ref.endswith(("/", ".lock")):
        raise SyncError(f"ref {ref!r} is not a full ref name like {DEFAULT_REF}; pass --ref refs/homeport/<name>")


class _Sync:
    def __init__(self, store: Store, repo: Repository, remote: str, ref: str) -> None:
        self.store, self.repo, self.remote, self.ref = store, repo, remote, ref
        slug = (
            remote
            if re.fullmatch(r"[A-Za-z0-9._-]+", remote)
            else "url-" + hashlib.sha1(remote.encode()).hexdigest()[:12]
        )
        self.tracking = f"refs/homeport/remotes/{slug}/{ref.rsplit('/', 1)[-1]}"
        self.local: Local | None = None
        self.report: dict[str, Any] = {
            "remote": remote,
            "ref": ref,
            "exported": 0,
            "received": 0,
            "merged": False,
            "pushed": False,
            "conflicts": [],
            "skipped": [],
        }

    def run(self, push: bool) -> dict[str, Any]:
        head = self._export()
        destination = self._destination()
        for _ in range(_MAX_ROUNDS):
            theirs = self.repo.fetch(self.remote, destination, self.tracking) if self.remote else None
            if theirs is None and self.remote and destination != FALLBACK_BRANCH and self._may_fall_back():
                # A clone of a repository whose host took only the branch: the memory is there.
                theirs = self.repo.fetch(self.remote, FALLBACK_BRANCH, self.tracking)
                if theirs is not None:
                    destination = FALLBACK_BRANCH
                    self._remember_destination(destination)
            if theirs is not None and theirs != head:
                if head is not None and self.repo.is_ancestor(theirs, head):
                    pass  # the remote is behind: push
                else:
                    head = self._take(head, theirs)
            if not push or not self.remote or head is None or head == theirs:
                break
            result = self.repo.push(self.remote, self.ref, destination)
            if result.ok:
                self.report["pushed"] = True
                break
            if result.non_fast_forward:
                continue  # someone pushed meanwhile: fetch and merge again
            if destination != FALLBACK_BRANCH and self._may_fall_back():
                destination = FALLBACK_BRANCH  # a host that takes only branches
                self.report["fallback"] = result.message
                self._remember_destination(destination)
                continue
            raise SyncError(
                f"the remote {self.remote!r} refused {destination}: {result.message}; check that you may push there"
            )
        else:
            raise SyncError(f"the remote {self.remote!r} kept moving during {_MAX_ROUNDS} attempts; sync again")
        self.report["remote_ref"] = destination
        self.report["commit"] = head
        self.report["open_conflicts"] = open_conflicts(self.store, limit=0)["count"]
        return self.report

    def _may_fall_back(self) -> bool:
        return self.ref == DEFAULT_REF

    # -- export ---------------------------------------------------------------------------------------

    def _export(self) -> str | None:
        with self.store.write() as conn:
            clock = self._clock(conn)
            head = self.repo.resolve(self.ref)
            local = read_local(conn)
            files, rows = _exported_files(conn, self.repo, head, local, clock)
            if files:
                head = self.repo.commit(
                    self.ref, files, f"homeport: {len(files)} item(s)", [head] if head else [], expected=head
                )
            _save_rows(conn, rows)
            for key, item_type, item_id, digest, clocks in rows:
                local.known[key] = Known(key, item_type, item_id, digest, clocks)
            self.local = local
            _set_state(conn, "clock", clock.last)
            self.report["exported"] = len(files)
        return head

    def _clock(self, conn: Connection) -> HybridClock:
        # One replica id per store and clone: a store file copied into another clone (or a PostgreSQL
        # workspace synced from two clones) must not hand out the same clocks as the original.
        name = "replica " + hashlib.sha1(str(self.repo.git_dir).encode()).hexdigest()[:16]
        replica = _get_state(conn, name)
        if replica is None:
            replica = random_ids.token_hex(6)
            _set_state(conn, name, replica)
        return HybridClock.load(replica, _get_state(conn, "clock"))

    def _destination(self) -> str:
        with self.store.read() as conn:
            return _get_state(conn, f"destination {self.remote} {self.ref}") or self.ref

    def _remember_destination(self, destination: str) -> None:
        with self.store.write() as conn:
            _set_state(conn, f"destination {self.remote} {self.ref}", destination)

    # -- merge and apply ------------------------------------------------------------------------------

    def _take(self, head: str | None, theirs: str) -> str:
        """Bring the remote's commit into the local ref and the store; returns the new local head."""
        if head is None or self.repo.is_ancestor(head, theirs):
            paths = self.repo.changed_paths(head, theirs)
            tree = self.repo.tree_of(theirs)
            blobs = self.repo.read_blobs(tree[p] for p in paths)
            docs = {p: decode(blobs[tree[p]]) for p in paths}
            self._apply(docs, lambda: self.repo.update_ref(self.ref, theirs, head))
            self.report["received"] += len(docs)
            return theirs
        bases = self.repo.merge_bases(head, theirs)
        paths = self.repo.changed_paths(head, theirs)
        ours_tree, theirs_tree = self.repo.tree_of(head), self.repo.tree_of(theirs)
        base_trees = [self.repo.tree_of(b) for b in bases]
        wanted = [t[p] for p in paths for t in (ours_tree, theirs_tree, *base_trees) if p in t]
        blobs = self.repo.read_blobs(wanted)
        merged: dict[str, Doc] = {}
        files: dict[str, bytes] = {}
        for path in paths:
            ours = decode(blobs[ours_tree[path]]) if path in ours_tree else None
            other = decode(blobs[theirs_tree[path]]) if path in theirs_tree else None
            if ours is None or other is None:
                doc = ours or other
                assert doc is not None
            else:
                base_docs = [decode(blobs[t[path]]) if path in t else None for t in base_trees]
                doc, _ = merge(ours, other, base_docs)
            body = encode(doc)
            if path not in ours_tree or blobs[ours_tree[path]] != body:
                merged[path] = doc
                files[path] = body
        self.report["merged"] = True
        self.report["received"] += len(merged)
        new_head: list[str] = []

        def move_ref() -> None:
            new_head.append(
                self.repo.commit(self.ref, files, f"homeport: merge {theirs[:12]}", [head, theirs], expected=head)
            )

        self._apply(merged, move_ref)
        return new_head[0]

    def _apply(self, docs: dict[str, Doc], move_ref: Callable[[], None]) -> None:
        by_key = {doc["key"]: doc for doc in docs.values()}
        with self.store.write() as conn:
            clock = self._clock(conn)
            # What the export read (no other sync ran since: the lock; an agent's write since is found by uid
            # or natural key), then what the store holds now, which the next round starts from.
            before = self.local if self.local is not None else read_local(conn)
            applied = apply_docs(conn, before, by_key)
            written = {item for item in applied.items.values() if item is not None}
            keys = {**before.keys, **{item: key for key, item in applied.items.items() if item is not None}}
            after = read_local(conn, only=written, keys=keys)
            self.local = None  # a later round of this sync reads the whole store again
            ids = applied.items
            rows: list[_Row] = []
            for key, doc in by_key.items():
                if stamp := max_clock(doc):
                    clock.witness(stamp)
                item = ids.get(key)
                if item is not None and item in after.views:
                    rows.append((key, doc["type"], item[1], after.digests[item], _clocks(doc)))
                else:  # a tombstone: the id it had here, if any, so its versions stay its own
                    gone = applied.removed.get(key) or _known_id(before, key)
                    rows.append((key, doc["type"], gone, "", _clocks(doc)))
            _save_rows(conn, rows)
            self._record_conflicts(conn, by_key, ids)
            _set_state(conn, "clock", clock.last)
            self.report["skipped"].extend(applied.skipped)
            move_ref()

    def _record_conflicts(self, conn: Connection, docs: dict[str, Doc], ids: dict[str, Any]) -> None:
        c = sync_conflicts.c
        known = {
            (r.doc, r.field, r.lost) for r in conn.execute(select(c.doc, c.field, c.lost).where(c.doc.in_(list(docs))))
        }
        stamp = now()
        for key, doc in docs.items():
            for conflict in doc["conflicts"].values():
                if (key, conflict["field"], conflict["lost"]) in known:
                    continue
                conn.execute(
                    insert(sync_conflicts).values(
                        doc=key,
                        field=conflict["field"],
                        lost=conflict["lost"],
                        won=conflict["won"],
                        lost_value=json.dumps(conflict["value"], ensure_ascii=False, sort_keys=True),
                        detected_at=stamp,
                    )
                )
                item = ids.get(key)
                self.report["conflicts"].append(
                    {
                        "file": f"{doc['type']}/{key}",
                        "item_type": doc["type"],
                        "item_id": item[1] if item else None,
                        "field": conflict["field"],
                        "kept": conflict["won"],
                        "lost": conflict["lost"],
                    }
                )


_Row = tuple[str, str, int | None, str, str]  # a row of sync_items: doc, item_type, item_id, digest, clocks


def _exported_files(
    conn: Connection, repo: Repository, head: str | None, local: Local, clock: HybridClock
) -> tuple[dict[str, bytes], list[_Row]]:
    """The files of every item that changed since it was last exported or applied, and their new rows."""
    changed: list[tuple[str, str, tuple[str, int] | None, int | None]] = []
    for present in local.views:
        key = local.keys[present]
        known = local.known.get(key)
        if known is None or (known.item_type, known.item_id) != present or known.digest != local.digests[present]:
            changed.append((key, present[0], present, present[1]))
    for known in local.known.values():
        if known.digest and known.item_id is not None and (known.item_type, known.item_id) not in local.views:
            changed.append((known.doc, known.item_type, None, known.item_id))  # deleted here since
    orphans, mark = deleted_unsynced(conn, local, _get_state(conn, "deleted since") or "")
    for gone_type, gone_id in orphans:  # created and deleted between two syncs
        changed.append((new_uid(), gone_type, None, gone_id))
    _set_state(conn, "deleted since", mark)
    if not changed:
        return {}, []
    tree = repo.tree_of(head)
    paths = {key: doc_path(item_type, key) for key, item_type, _, _ in changed}
    blobs = repo.read_blobs(tree[p] for p in paths.values() if p in tree)
    histories = versions_of(conn, [(t, i) for _, t, _, i in changed if i is not None])
    files: dict[str, bytes] = {}
    rows: list[_Row] = []
    for key, item_type, item, item_id in changed:
        path = paths[key]
        before = blobs[tree[path]] if path in tree else None
        prev = decode(before) if before is not None else None
        if prev is not None and (stamp := max_clock(prev)):
            clock.witness(stamp)
        if item is not None:
            view = dict(local.views[item])
            view["versions"] = histories[item]
            _refuse_secrets(item_type, item[1], key, view, prev)
            physical = stamp_millis(view["updated_at"]) or None

            def tick(physical: int | None = physical) -> str:
                return clock.tick(physical)

            doc = record_local(prev, item_type, key, view, tick)
            rows.append((key, item_type, item[1], local.digests[item], _clocks(doc)))
        else:
            history = histories[(item_type, item_id)] if item_id is not None else {}
            if prev is None:  # never exported: its last fields, so the file says what was deleted
                prev = record_local(None, item_type, key, last_view(item_type, history), clock.tick)
            doc = record_local(prev, item_type, key, None, clock.tick)
            _refuse_secrets(item_type, item_id or 0, key, {"fields": {}, "versions": history}, prev)
            doc["versions"].update(history)
            rows.append((key, item_type, item_id, "", _clocks(doc)))
        body = encode(doc)
        if body != before:
            files[path] = body
    return files, rows


def _known_id(local: Local, key: str) -> int | None:
    row = local.known.get(key)
    return row.item_id if row is not None else None


def _refuse_secrets(item_type: str, item_id: int, key: str, view: dict[str, Any], prev: Doc | None) -> None:
    """Raises SyncSecretError naming the item and field, for a secret in what this export adds to its file.

    Only what is new to the file is scanned (a changed field, a version it lacks), each text once.
    """
    values: dict[str, Any] = {}
    seen: set[str] = set()
    old_fields = prev["fields"] if prev is not None else {}
    old_versions = prev["versions"] if prev is not None else {}

    def add(name: str, value: Any) -> None:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        if value is not None and text not in seen:
            seen.add(text)
            values[name] = value

    for name, value in view["fields"].items():
        if name not in old_fields or old_fields[name]["v"] != value:
            add(name, value)
    if view.get("tags"):
        add("tags", view["tags"])
    for vkey, version in view["versions"].items():
        if vkey not in old_versions:
            for name, value in version["fields"].items():
                add(f"{name} (version of {version['at']})", value)
    findings = find_secrets(values) if values else []
    if findings:
        first = findings[0]
        raise SyncSecretError(
            f"{item_type} {item_id} (file {doc_path(item_type, key)}) holds {first.describe()}; nothing was "
            f"exported or pushed: remove the secret from the item (and its versions) and sync again"
        )


def _clocks(doc: Doc) -> str:
    clocks = {name: reg["c"] for name, reg in doc["fields"].items()}
    clocks["deleted"] = doc["deleted"]["c"]
    return json.dumps(clocks, sort_keys=True)


def _save_rows(conn: Connection, rows: list[_Row]) -> None:
    if not rows:
        return
    keys = [r[0] for r in rows]
    for start in range(0, len(keys), 500):
        conn.execute(delete(sync_items).where(sync_items.c.doc.in_(keys[start : start + 500])))
    conn.execute(
        insert(sync_items),
        [{"doc": k, "item_type": t, "item_id": i, "digest": d, "clocks": c} for k, t, i, d, c in rows],
    )


def _get_state(conn: Connection, name: str) -> str | None:
    return conn.execute(select(sync_state.c.value).where(sync_state.c.name == name)).scalar()


def _set_state(conn: Connection, name: str, value: str) -> None:
    if conn.execute(update(sync_state).where(sync_state.c.name == name).values(value=value)).rowcount == 0:
        conn.execute(insert(sync_state).values(name=name, value=value))
