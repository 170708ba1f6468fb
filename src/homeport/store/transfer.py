"""Export a workspace's memory to files and import it back (JSON exactly, Markdown for people).

Layout of an export directory: one file per item type (`decisions`, `progress`,
`system_patterns`, `custom_data`, `product_context`, `active_context`, `links`) plus
`manifest.json`. Items are ordered by id; contexts carry every version. The Markdown form is
described in `homeport.store._markdown`.

An import reads and validates every file before it writes anything: each item must be a valid
`homeport.store.fields` record (the types and caps of the tool arguments), ids unique, context
versions 1..n. The writes then run in one transaction; any refusal leaves the memory as it was.
Files are only read and written as regular files inside the workspace: a symlink, FIFO or
device in an export directory is refused, never followed or opened.

"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError
from sqlalchemy import Connection, delete, select

from homeport.errors import HomeportError, InvalidItemError
from homeport.store import search as search_index
from homeport.store._common import dump_json, load_json, now, row_dict
from homeport.store._markdown import parse_markdown, to_markdown
from homeport.store.contexts import write_context
from homeport.store.custom_data import upsert_custom_data
from homeport.store.database import SCHEMA_REVISION, Store
from homeport.store.decisions import insert_decision
from homeport.store.fields import RECORDS
from homeport.store.links import insert_link
from homeport.store.patterns import upsert_system_pattern
from homeport.store.progress import find_cycle, insert_progress, overwrite_progress
from homeport.store.schema import (
    context_history,
    contexts,
    custom_data,
    decisions,
    item_tags,
    links,
    progress,
    system_patterns,
)
from homeport.store.tags import tags_of

__all__ = ["DEFAULT_EXPORT_DIR", "MAX_FILE_BYTES", "export_memory", "import_memory", "inside_workspace"]

DEFAULT_EXPORT_DIR = ".homeport/export"
FORMAT_VERSION = 1
# One export file; far above any real memory (a 100,000-item export is about 60 MB of JSON).
MAX_FILE_BYTES = 512 * 1024 * 1024
Format = Literal["json", "markdown"]
# section -> text fields (rendered as Markdown); the rest of an item is carried as JSON metadata
_SECTIONS: dict[str, tuple[str, ...]] = {
    "decisions": ("summary", "rationale", "implementation_details"),
    "progress": ("description",),
    "system_patterns": ("name", "description"),
    "custom_data": (),
    "product_context": (),
    "active_context": (),
    "links": ("description",),
}


def inside_workspace(root: Path, given: str | None, default: str) -> Path:
    """Resolve a user-given directory against the workspace and refuse anything outside it.

    Raises:
        InvalidItemError: the directory lies outside the workspace (after resolving symlinks and ..).
    """
    candidate = Path(given or default)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = Path(os.path.realpath(candidate))
    if resolved != root and root not in resolved.parents:
        raise InvalidItemError(
            f"directory {given or default!r} resolves to {resolved}, outside the workspace {root}; "
            f"use a path inside the workspace (default: {DEFAULT_EXPORT_DIR})"
        )
    return resolved


def export_memory(
    store: Store | None, root: Path, *, fmt: Format = "json", output_dir: str | None = None
) -> dict[str, Any]:
    """Write the memory of the workspace under `output_dir`; returns the files and item counts.

    Raises:
        InvalidItemError: an unknown format, an output directory outside the workspace, or an entry
            in it that is not a regular file where an export file goes (a symlink, FIFO, device).
    """
    if fmt not in ("json", "markdown"):
        raise InvalidItemError(f"format {fmt!r} is not json or markdown")
    target = inside_workspace(root, output_dir, DEFAULT_EXPORT_DIR)
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
            else to_markdown(section, items, _SECTIONS[section])
        )
        for section, items in data.items()
    }
    bodies["manifest.json"] = json.dumps(manifest, indent=2) + "\n"
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name in bodies:  # all checked before the first write: a refusal leaves the directory as it was
            _refuse_special(target / name)
        for name, body in bodies.items():
            _write_atomic(target / name, body)
        _sync_directory(target)
    except OSError as exc:
        raise InvalidItemError(
            f"cannot export to {target}: {exc.strerror or exc}; choose a directory inside the "
            "workspace that is not a file"
        ) from exc
    return {"output_dir": str(target), "files": ["manifest.json", *list(bodies)[:-1]], **manifest}


def import_memory(
    store: Store,
    root: Path,
    *,
    input_dir: str | None = None,
    mode: Literal["merge", "replace"] = "merge",
    dry_run: bool = False,
    allow_empty: bool = False,
) -> dict[str, Any]:
    """Read an export back, in one transaction. `replace` empties the memory first; `merge` keeps it
    and overwrites items with the same id (custom data: same category and key; patterns: same name).
    `dry_run` does everything but commit and reports what would change.

    Raises:
        InvalidItemError: a missing or unreadable export, an unknown mode, an invalid item (the file,
            item and field are named), or `replace` with an empty export unless `allow_empty`.
    """
    if mode not in ("merge", "replace"):
        raise InvalidItemError(f"mode {mode!r} is not merge or replace")
    source = inside_workspace(root, input_dir, DEFAULT_EXPORT_DIR)
    try:
        manifest = json.loads(_read_file(root, source / "manifest.json"))
    except (OSError, ValueError) as exc:
        raise InvalidItemError(f"{source} holds no readable manifest.json; export there first ({exc})") from None
    fmt = manifest.get("format", "json") if isinstance(manifest, dict) else None
    if fmt not in ("json", "markdown"):
        raise InvalidItemError(f"{source / 'manifest.json'}: format {fmt!r} is not json or markdown; export again")
    data = {section: _read_section(root, source, section, fmt) for section in _SECTIONS}
    if mode == "replace":  # a merge keeps what a shortened export leaves out: importing a subset is fine
        _refuse_lost_items(source, manifest, data)
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
            result["counts"] = _load(conn, data, replace=mode == "replace")
            result["changes"] = _changes(before, _collect_in(conn))
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    return result


class _DryRun(Exception):
    """Raised inside the write transaction of a dry run, so it rolls back."""


def _empty(conn: Connection) -> None:
    for table in (links, item_tags, context_history, contexts, custom_data, system_patterns, decisions):
        conn.execute(delete(table))
    conn.execute(progress.update().values(parent_id=None))  # any tree shape, even a damaged one with a cycle
    conn.execute(delete(progress))
    conn.exec_driver_sql("DELETE FROM search_index")


def _changes(before: dict[str, list[dict[str, Any]]], after: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per section: ids (context versions) added, changed and removed."""
    out: dict[str, Any] = {}
    for section in _SECTIONS:
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


def _collect(store: Store | None) -> dict[str, list[dict[str, Any]]]:
    if store is None:
        return {s: [] for s in _SECTIONS}
    with store.read() as conn:
        return _collect_in(conn)


def _collect_in(conn: Connection) -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = {s: [] for s in _SECTIONS}
    for section, table, item_type in (
        ("decisions", decisions, "decision"),
        ("progress", progress, None),
        ("system_patterns", system_patterns, "system_pattern"),
        ("custom_data", custom_data, None),
        ("links", links, None),
    ):
        rows = [row_dict(r) for r in conn.execute(select(table).order_by(table.c.id))]
        if item_type:
            tags = tags_of(conn, item_type, [r["id"] for r in rows])
            rows = [{**r, "tags": tags.get(r["id"], [])} for r in rows]
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
    return data


def _load(conn: Connection, data: dict[str, list[dict[str, Any]]], *, replace: bool) -> dict[str, int]:
    """Write validated items inside the open transaction.

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
        at[:] = ["progress", "entries", None]
        _load_progress(conn, data["progress"])
        cycle = find_cycle(conn)
        if cycle:
            raise InvalidItemError(
                f"parents would form a cycle ({' -> '.join(map(str, cycle))}) with the entries already in the "
                "memory; fix parent_id in the export, or import with mode=replace"
            )
        # Patterns match by name and custom data by category and key, so they may keep another local
        # id; links follow them through this map.
        local_ids: dict[tuple[str, int], int] = {}
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
    except HomeportError as exc:
        section, index, item_id = at
        named = f"{section} item {index}" + (f" (id {item_id})" if item_id is not None else "")
        raise InvalidItemError(f"{named}: {exc.message}; nothing was imported") from exc
    return {section: len(items) for section, items in data.items()}


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
        conn.execute(delete(table).where(table.c.id == item_id))


def _read_section(root: Path, source: Path, section: str, fmt: str) -> list[dict[str, Any]]:
    """The validated items of one section (none if its file is absent).

    Raises:
        InvalidItemError: an unreadable or malformed file, or an invalid item, named with its field.
    """
    path = source / f"{section}.{'json' if fmt == 'json' else 'md'}"
    if not os.path.lexists(path):
        return []
    try:
        text = _read_file(root, path)
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidItemError(f"cannot read {path}: {exc}; export again, or fix the file by hand") from None
    if fmt == "json":
        try:
            loaded = json.loads(text)
        except ValueError as exc:
            raise InvalidItemError(f"{path} is not valid JSON: {exc}; export again, or fix the file by hand") from None
        if not isinstance(loaded, list):
            raise InvalidItemError(f"{path} holds a {type(loaded).__name__}, not a list of items; export again")
        items: list[tuple[int | None, Any]] = [(None, item) for item in loaded]
    else:
        items = [(line, item) for line, item in parse_markdown(str(path), text, section, _SECTIONS[section])]
    valid = [_validate(path, section, index, line, item) for index, (line, item) in enumerate(items)]
    _refuse_duplicates(path, section, valid)
    return valid


def _refuse_lost_items(source: Path, manifest: dict[str, Any], data: dict[str, list[dict[str, Any]]]) -> None:
    """A section with fewer items than the manifest counted lost some (a deleted file, a cut list); a
    replace would erase them from the memory. More items are a hand addition, and welcome.

    Raises:
        InvalidItemError: naming the section, the count exported and the count read.
    """
    counts = manifest.get("counts")
    if not isinstance(counts, dict):
        return
    for section, items in data.items():
        exported = counts.get(section)
        if isinstance(exported, int) and len(items) < exported:
            raise InvalidItemError(
                f"{source}: the manifest counts {exported} {section} but the files hold {len(items)}; a file or "
                "items were removed; export again, or lower the count in manifest.json if that was intended"
            )


def _validate(path: Path, section: str, index: int, line: int | None, item: Any) -> dict[str, Any]:
    where = f"{path} item {index}" + (f" (line {line})" if line else "")
    if not isinstance(item, dict):
        raise InvalidItemError(f"{where} is a {type(item).__name__}, not an object; nothing was imported")
    if isinstance(item.get("id"), int):
        where += f", id {item['id']}"
    try:
        record = RECORDS[section].model_validate(item)
    except ValidationError as exc:
        problems = "; ".join(
            f"field {'.'.join(str(p) for p in err['loc']) or '(item)'}: {_reason(err)}" for err in exc.errors()
        )
        raise InvalidItemError(f"{where}: {problems}; nothing was imported") from None
    try:  # the store keeps UTF-8 text: a lone surrogate such as \udcff from a JSON escape cannot be kept
        json.dumps(item, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidItemError(f"{where} holds text that is not valid Unicode ({exc.reason}); fix the file") from None
    return record.model_dump()


def _reason(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown field (misspelt, or from a newer Homeport)"
    if err["type"] == "missing":
        return "missing"
    return f"{err['msg']} (got {type(err['input']).__name__})"


def _refuse_duplicates(path: Path, section: str, items: list[dict[str, Any]]) -> None:
    """Two items the import would write to one place: the second would silently replace the first."""
    if section.endswith("_context"):
        versions = [i["version"] for i in items]
        if versions != list(range(1, len(versions) + 1)):
            raise InvalidItemError(
                f"{path}: versions {versions[:10]} are not 1, 2, 3... in order; a version was removed or "
                "edited; export again"
            )
        return
    keys: dict[str, Any] = {
        "decisions": lambda i: i["id"],
        "progress": lambda i: i["id"],
        "system_patterns": lambda i: i["name"].casefold(),
        "custom_data": lambda i: (i["category"], i["key"]),
        "links": lambda i: (i["source_type"], i["source_id"], i["target_type"], i["target_id"], i["relationship"]),
    }
    for key in {keys[section], lambda i: i["id"]}:
        seen: dict[Any, int] = {}
        for index, item in enumerate(items):
            if key(item) in seen:
                raise InvalidItemError(
                    f"{path} items {seen[key(item)]} and {index} both write {key(item)!r}; keep one; "
                    "nothing was imported"
                )
            seen[key(item)] = index


def _read_file(root: Path, path: Path) -> str:
    """A regular file inside the workspace as text; a FIFO or device is never opened (it could block).

    Raises:
        InvalidItemError: a symlink that leaves the workspace, a special file, or a file over MAX_FILE_BYTES.
        OSError, UnicodeDecodeError: the file cannot be read.
    """
    real = Path(os.path.realpath(path))
    if real != root and root not in real.parents:
        raise InvalidItemError(f"{path} is a symlink to {real}, outside the workspace {root}; copy the file instead")
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidItemError(f"{path} is not a regular file (a FIFO, device or directory); import refuses it")
        if info.st_size > MAX_FILE_BYTES:
            raise InvalidItemError(f"{path} is {info.st_size:,} bytes, over the import limit of {MAX_FILE_BYTES:,}")
        # newline="" semantics: a \r in a text field stays as written
        return handle.read(MAX_FILE_BYTES + 1).decode("utf-8")


def _refuse_special(path: Path) -> None:
    """An export replaces regular files only: a symlink is not followed or replaced, a FIFO or device is kept.

    Raises:
        InvalidItemError: `path` exists and is not a regular file.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        kind = "a symlink" if stat.S_ISLNK(mode) else "a directory" if stat.S_ISDIR(mode) else "a special file"
        raise InvalidItemError(
            f"{path} is {kind}, not a regular file; export replaces only its own files: remove it or "
            "export to another directory"
        )


def _sync_directory(directory: Path) -> None:
    """Make the renames of an export durable (POSIX; a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_atomic(path: Path, body: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())  # else a crash after the rename may leave an empty file for the old one
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
