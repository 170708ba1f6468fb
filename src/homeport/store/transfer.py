"""Export a workspace's memory to files and import it back (JSON exactly, Markdown for people).

Layout of an export directory: one file per item type (`decisions`, `progress`,
`system_patterns`, `custom_data`, `product_context`, `active_context`, `links`) plus
`manifest.json`. Items are ordered by id; contexts carry every version. The Markdown form is
described in `homeport.store._markdown`.

An import reads and validates every file before it writes anything: each item must be a valid
`homeport.store.fields` record (the types and caps of the tool arguments), ids unique, context
versions 1..n. The writes then run in one transaction; any refusal leaves the memory as it was.
Files are only read and written as regular files inside the workspace: a symlink, FIFO or
device in an export directory is refused, never followed or opened (see `_transfer_files`). An
export writes through a descriptor of its directory, reached from the workspace root without
following a symlink, and replaces only files of an earlier Homeport export (see `_export_dir`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Connection, delete, select

from homeport.errors import HomeportError, InvalidItemError
from homeport.store import search as search_index
from homeport.store._common import dump_json, load_json, now, row_dict
from homeport.store._export_dir import MARKER, open_export_dir, refuse_foreign_files, write_file
from homeport.store._markdown import to_markdown
from homeport.store._transfer_files import (
    DEFAULT_EXPORT_DIR,
    MAX_FILE_BYTES,
    inside_workspace,
    read_file,
)
from homeport.store._transfer_history import HISTORY, collect_history, load_history, read_history
from homeport.store._transfer_read import SECTIONS, read_section, refuse_lost_items
from homeport.store.contexts import write_context
from homeport.store.custom_data import upsert_custom_data
from homeport.store.database import SCHEMA_REVISION, Store, advance_sequence
from homeport.store.decisions import insert_decision
from homeport.store.links import insert_link
from homeport.store.patterns import upsert_system_pattern
from homeport.store.progress import find_cycle, insert_progress, overwrite_progress
from homeport.store.schema import (
    changesets,
    context_history,
    contexts,
    custom_data,
    decisions,
    item_branches,
    item_states,
    item_tags,
    item_uids,
    item_versions,
    item_writers,
    links,
    progress,
    system_patterns,
)
from homeport.store.tags import tags_of
from homeport.store.uids import assign_uid, forget_uid, uids_of

__all__ = [
    "DEFAULT_EXPORT_DIR",
    "MAX_FILE_BYTES",
    "export_memory",
    "import_memory",
    "inside_workspace",
    "memory_checksum",
]

# 1: the items only (their latest text). 2: also their history, lifecycle and provenance (`_transfer_history`);
# a version 1 export still imports (as it always did: each item gets a first version).
FORMAT_VERSION = 2
Format = Literal["json", "markdown"]


def export_memory(
    store: Store | None, root: Path, *, fmt: Format = "json", output_dir: str | None = None
) -> dict[str, Any]:
    """Write the memory of the workspace under `output_dir`; returns the files and item counts.

    Raises:
        InvalidItemError: an unknown format, an output directory outside the workspace or reached
            through a symlink that changed meanwhile, an entry in it that is not a regular file where an
            export file goes (a symlink, FIFO, device), or a file there that no Homeport export wrote.
    """
    if fmt not in ("json", "markdown"):
        raise InvalidItemError(f"format {fmt!r} is not json or markdown")
    try:
        target = inside_workspace(root, output_dir, DEFAULT_EXPORT_DIR)
    except OSError as exc:  # realpath racing a directory being swapped
        raise InvalidItemError(
            f"cannot export to {output_dir or DEFAULT_EXPORT_DIR!r}: it changed while Homeport resolved it "
            f"({exc.strerror or exc}); retry once the directory is stable"
        ) from exc
    data = _collect(store)
    manifest = {
        "format": fmt,
        "format_version": FORMAT_VERSION,
        "schema_revision": SCHEMA_REVISION,
        "exported_at": now(),
        "counts": {k: len(v) for k, v in data.items()},
    }
    bodies = {
        f"{section}.{'json' if fmt == 'json' else 'md'}": (
            json.dumps(items, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
            if fmt == "json"
            else to_markdown(section, items, SECTIONS.get(section, ()))
        )
        for section, items in data.items()
    }
    bodies["manifest.json"] = json.dumps({**MARKER, **manifest}, indent=2) + "\n"
    names = ["manifest.json", *list(bodies)[:-1]]
    try:
        fd = open_export_dir(root, target)
        try:
            # All checked before the first write: a refusal leaves the directory as it was. The manifest
            # is written last, so a directory is marked as Homeport's only once its files are there.
            refuse_foreign_files(fd, target, names)
            for name, body in bodies.items():
                write_file(fd, name, body)
            with contextlib.suppress(OSError):
                os.fsync(fd)  # the renames, durable
        finally:
            os.close(fd)
    except OSError as exc:
        raise InvalidItemError(
            f"cannot export to {target}: {exc.strerror or exc}; choose a directory inside the "
            "workspace that is not a file"
        ) from exc
    return {"output_dir": str(target), "files": names, **manifest}


def import_memory(
    store: Store,
    root: Path,
    *,
    input_dir: str | None = None,
    mode: Literal["merge", "replace"] = "merge",
    dry_run: bool = False,
    screen: Callable[[dict[str, Any]], None] | None = None,
    allow_empty: bool = False,
) -> dict[str, Any]:
    """Read an export back, in one transaction. `replace` empties the memory first; `merge` keeps it
    and overwrites items with the same id (custom data: same category and key; patterns: same name).
    `dry_run` does everything but commit and reports what would change. `screen(data)` sees
    everything read, by section, before anything is written, and may refuse it.

    Raises:
        InvalidItemError: a missing or unreadable export, an unknown mode, an invalid item (the file,
            item and field are named), or `replace` with an empty export unless `allow_empty`.
        HomeportError: whatever `screen` raises.
    """
    if mode not in ("merge", "replace"):
        raise InvalidItemError(f"mode {mode!r} is not merge or replace")
    source = inside_workspace(root, input_dir, DEFAULT_EXPORT_DIR)
    try:
        manifest = json.loads(read_file(root, source / "manifest.json"))
    except (OSError, ValueError) as exc:
        raise InvalidItemError(f"{source} holds no readable manifest.json; export there first ({exc})") from None
    fmt = manifest.get("format", "json") if isinstance(manifest, dict) else None
    if fmt not in ("json", "markdown"):
        raise InvalidItemError(f"{source / 'manifest.json'}: format {fmt!r} is not json or markdown; export again")
    version = manifest.get("format_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= FORMAT_VERSION:
        raise InvalidItemError(
            f"{source / 'manifest.json'}: format_version {version!r} is not one this Homeport reads (1 to "
            f"{FORMAT_VERSION}); a newer Homeport wrote it: upgrade Homeport to import it"
        )
    data = {section: read_section(root, source, section, fmt) for section in SECTIONS}
    # Version 1 had no history files: one lying in its directory is left over from another export.
    data |= {section: read_history(root, source, section, fmt) if version >= 2 else [] for section in HISTORY}
    if screen is not None:
        screen(data)
    if mode == "replace":  # a merge keeps what a shortened export leaves out: importing a subset is fine
        refuse_lost_items(source, manifest, data)
    result: dict[str, Any] = {"input_dir": str(source), "mode": mode, "dry_run": dry_run}
    try:
        with store.write() as conn:
            before = _collect_in(conn)
            if mode == "replace":
                if not any(data.values()) and any(before.values()) and not allow_empty:
                    raise InvalidItemError(
                        f"{source} holds no items, so replace would erase the whole memory; pass "
                        "allow_empty=true (CLI: --allow-empty) if that is what you want"
                    )
                _empty(conn)
            had = _with_history(conn)
            local_ids: dict[tuple[str, int], int] = {}
            result["counts"] = _load(conn, data, replace=mode == "replace", local_ids=local_ids)
            # a version 1 export carries no history: each item keeps the first version its write gave it
            kept = {}
            if version >= 2:
                kept = load_history(conn, data, local_ids=local_ids, had=had, replace=mode == "replace")
            if kept:  # rows of items that had their own: the local history stays
                result["history_kept_local"] = kept
            result["changes"] = _changes(before, _collect_in(conn))
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    return result


def memory_checksum(data: dict[str, list[dict[str, Any]]]) -> str:
    """SHA-256 of the memory as an export holds it (every item, tag, uid and context version, and the
    history, lifecycle and provenance rows of `_transfer_history`), canonical JSON."""
    return hashlib.sha256(dump_json(data).encode("utf-8")).hexdigest()


class _DryRun(Exception):
    """Raised inside the write transaction of a dry run, so it rolls back."""


def _empty(conn: Connection) -> None:
    # Replacing the memory replaces its history too (item_versions, context_history): the import is the new start.
    tables = (
        links,
        item_tags,
        item_uids,
        item_writers,
        item_versions,
        item_branches,  # the replaced items' branches: an imported item with the same id is seen everywhere
        item_states,  # archived, superseded, expiring: of the replaced items, not of imported ones with their ids
        changesets,  # what they hold and would revert names the replaced items
        context_history,
        contexts,
        custom_data,
        system_patterns,
    )
    for table in (*tables, decisions):
        conn.execute(delete(table))
    conn.execute(progress.update().values(parent_id=None))  # any tree shape, even a damaged one with a cycle
    conn.execute(delete(progress))
    conn.exec_driver_sql("DELETE FROM search_index")
    conn.exec_driver_sql("DELETE FROM item_vectors")


def _changes(before: dict[str, list[dict[str, Any]]], after: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per section: ids (context versions) added, changed and removed."""
    out: dict[str, Any] = {}
    for section in SECTIONS:
        key = "version" if section.endswith("_context") else "id"
        old = {i[key]: i for i in before[section]}
        new = {i[key]: i for i in after[section]}
        out[section] = {
            "added": sorted(set(new) - set(old)),
            # as stored text: in Python 1 == 1.0 == True, in JSON they differ
            "changed": sorted(k for k in set(new) & set(old) if dump_json(new[k]) != dump_json(old[k])),
            "removed": sorted(set(old) - set(new)),
        }
    return out


def _with_history(conn: Connection) -> dict[str, set[tuple[str, int]]]:
    """Per item-keyed history table, the items that hold rows of it (for versions: also every live item)."""
    had: dict[str, set[tuple[str, int]]] = {}
    for section, table in HISTORY.items():
        if "item_type" in table.c:
            had[section] = {(t, i) for t, i in conn.execute(select(table.c.item_type, table.c.item_id).distinct())}
    for item_type, table in (
        ("decision", decisions),
        ("progress", progress),
        ("system_pattern", system_patterns),
        ("custom_data", custom_data),
    ):
        had["item_versions"] |= {(item_type, i) for i in conn.execute(select(table.c.id)).scalars()}
    return had


def _collect(store: Store | None) -> dict[str, list[dict[str, Any]]]:
    if store is None:
        return {s: [] for s in (*SECTIONS, *HISTORY)}
    with store.read() as conn:
        return _collect_in(conn)


def _collect_in(conn: Connection) -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = {s: [] for s in SECTIONS}
    for section, table, item_type, uid_type in (
        ("decisions", decisions, "decision", "decision"),
        ("progress", progress, None, "progress"),
        ("system_patterns", system_patterns, "system_pattern", "system_pattern"),
        ("custom_data", custom_data, None, "custom_data"),
        ("links", links, None, None),
    ):
        rows = [row_dict(r) for r in conn.execute(select(table).order_by(table.c.id))]
        if item_type:
            tags = tags_of(conn, item_type, [r["id"] for r in rows])
            rows = [{**r, "tags": tags.get(r["id"], [])} for r in rows]
        if uid_type:
            uids = uids_of(conn, uid_type, [r["id"] for r in rows])
            rows = [{**r, "uid": uids[r["id"]]} if r["id"] in uids else r for r in rows]
        for row in rows:
            row.pop("name_key", None)
            if section == "custom_data":
                row["value"] = load_json(row["value"])
        data[section] = rows
    for kind in ("product", "active"):
        versions = conn.execute(
            select(context_history).where(context_history.c.kind == kind).order_by(context_history.c.version)
        ).all()
        data[f"{kind}_context"] = [
            {"version": v.version, "content": load_json(v.content), "changed_at": v.changed_at} for v in versions
        ]
    data |= collect_history(conn)
    return data


def _load(
    conn: Connection,
    data: dict[str, list[dict[str, Any]]],
    *,
    replace: bool,
    local_ids: dict[tuple[str, int], int] | None = None,
) -> dict[str, int]:
    """Write validated items inside the open transaction; `local_ids` is filled with the exported
    (type, id) of each pattern and custom data entry and the id it was written under.

    Raises:
        InvalidItemError: an item the store refuses (a link to a missing item, a progress cycle), named.
    """
    at: list[Any] = ["decisions", 0, None]  # the item being written, for the error

    def each(section: str) -> Iterator[dict[str, Any]]:
        for index, item in enumerate(data[section]):
            at[:] = [section, index, item.get("id", item.get("version"))]
            yield item

    try:
        for d in each("decisions"):
            if not replace:
                _drop_existing(conn, decisions, "decision", d["id"])
            insert_decision(
                conn,
                d["summary"],
                rationale=d["rationale"],
                tags=d["tags"],
                implementation_details=d["implementation_details"],
                item_id=d["id"],
                created_at=d["created_at"],
                updated_at=d["updated_at"],
            )
            _keep_uid(conn, "decision", d["id"], d)
        at[:] = ["progress", "entries", None]
        _load_progress(conn, data["progress"])
        for p in data["progress"]:
            _keep_uid(conn, "progress", p["id"], p)
        cycle = find_cycle(conn)
        if cycle:
            raise InvalidItemError(
                f"parents would form a cycle ({' -> '.join(map(str, cycle))}) with the entries already in the "
                "memory; fix parent_id in the export, or import with mode=replace"
            )
        # Patterns match by name and custom data by category and key, so they may keep another local
        # id; links follow them through this map.
        if local_ids is None:
            local_ids = {}
        for p in each("system_patterns"):
            written = upsert_system_pattern(
                conn,
                p["name"],
                p["description"],
                tags=p["tags"],
                item_id=_free_id(conn, system_patterns, p["id"]),
                created_at=p["created_at"],
                updated_at=p["updated_at"],
            )
            local_ids[("system_pattern", p["id"])] = written["id"]
            _keep_uid(conn, "system_pattern", written["id"], p)
        for c in each("custom_data"):
            written = upsert_custom_data(
                conn,
                c["category"],
                c["key"],
                c["value"],
                item_id=_free_id(conn, custom_data, c["id"]),
                created_at=c["created_at"],
                updated_at=c["updated_at"],
            )
            local_ids[("custom_data", c["id"])] = written["id"]
            _keep_uid(conn, "custom_data", written["id"], c)
        for kind in ("product", "active"):
            at[:] = [f"{kind}_context", "versions", None]
            _load_context(conn, kind, data[f"{kind}_context"])
        for link in each("links"):
            source = local_ids.get((link["source_type"], link["source_id"]), link["source_id"])
            target = local_ids.get((link["target_type"], link["target_id"]), link["target_id"])
            result = insert_link(
                conn,
                link["source_type"],
                source,
                link["target_type"],
                target,
                link["relationship"],
                description=link["description"],
                created_at=link["created_at"],
            )
            wanted = _free_id(conn, links, link["id"])
            if result["created"] and wanted is not None and wanted != result["id"]:
                conn.execute(links.update().where(links.c.id == result["id"]).values(id=wanted))
                if conn.dialect.name != "sqlite":
                    advance_sequence(conn, "links", wanted)
    except HomeportError as exc:
        section, index, item_id = at
        named = f"{section} item {index}" + (f" (id {item_id})" if item_id is not None else "")
        raise InvalidItemError(f"{named}: {exc.message}; nothing was imported") from exc
    return {section: len(items) for section, items in data.items()}


def _keep_uid(conn: Connection, item_type: str, item_id: int, item: dict[str, Any]) -> None:
    """The item keeps the uid the export gave it (an export from before uids has none: it keeps its new one)."""
    if item.get("uid"):
        assign_uid(conn, item_type, item_id, item["uid"])


def _load_context(conn: Connection, kind: str, versions: list[dict[str, Any]]) -> None:
    """Without local history every version is replayed (exact); otherwise the imported document
    becomes the next version, unless it already is the current one (merging twice changes nothing)."""
    if not versions:
        return
    current = conn.execute(select(contexts.c.content).where(contexts.c.kind == kind)).scalar()
    if current is None:
        for v in versions:
            write_context(conn, kind, v["content"], changed_at=v["changed_at"])  # type: ignore[arg-type]
    elif current != dump_json(versions[-1]["content"]):
        write_context(conn, kind, versions[-1]["content"])  # type: ignore[arg-type]


def _load_progress(conn: Connection, entries: list[dict[str, Any]]) -> None:
    """Parents before children, whatever the ids; an existing id is updated in place, so local
    children of it keep a valid parent."""
    pending = sorted(entries, key=lambda p: p["id"])
    placed: set[int] = set(conn.execute(select(progress.c.id)).scalars())
    existing = set(placed)
    while pending:
        ready = [p for p in pending if p.get("parent_id") is None or p["parent_id"] in placed]
        if not ready:
            ids = {p["id"] for p in pending}
            looped = next((p for p in pending if p["parent_id"] in ids), None)
            if looped is not None:
                raise InvalidItemError(
                    f"progress {looped['id']} is its own ancestor through parent_id (a cycle); fix parent_id"
                )
            raise InvalidItemError(f"progress {pending[0]['id']} has a parent_id that is not in the export")
        for p in ready:
            if p["id"] in existing:
                overwrite_progress(conn, p)
            else:
                insert_progress(
                    conn,
                    p["status"],
                    p["description"],
                    parent_id=p.get("parent_id"),
                    item_id=p["id"],
                    created_at=p["created_at"],
                    updated_at=p["updated_at"],
                )
            placed.add(p["id"])
        done = {p["id"] for p in ready}
        pending = [p for p in pending if p["id"] not in done]


def _free_id(conn: Connection, table: Any, item_id: int) -> int | None:
    taken = conn.execute(select(table.c.id).where(table.c.id == item_id)).first() is not None
    return None if taken else item_id


def _drop_existing(conn: Connection, table: Any, item_type: str, item_id: int) -> None:
    if conn.execute(select(table.c.id).where(table.c.id == item_id)).first() is not None:
        conn.execute(delete(item_tags).where(item_tags.c.item_type == item_type, item_tags.c.item_id == item_id))
        search_index.unindex_item(conn, item_type, item_id)
        forget_uid(conn, item_type, item_id)
        conn.execute(delete(table).where(table.c.id == item_id))
