"""Export a workspace's memory to files and import it back (JSON exactly, Markdown for people).

Layout of an export directory: one file per item type (`decisions`, `progress`,
`system_patterns`, `custom_data`, `product_context`, `active_context`, `links`) plus
`manifest.json`. Items are ordered by id; contexts carry every version.

Markdown files wrap each item in HTML comments that carry its metadata, so the files read as
plain Markdown and still import every field:

    <!-- item {"id": 1, "created_at": "...", "updated_at": "...", "tags": ["db"]} -->
    ## Use SQLite WAL
    <!-- field summary -->
    Use SQLite WAL
    <!-- end summary -->
    <!-- end item -->
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Connection, delete, select

from homeport.errors import InvalidItemError
from homeport.store import search as search_index
from homeport.store._common import dump_json, load_json, now, row_dict
from homeport.store.contexts import write_context
from homeport.store.custom_data import upsert_custom_data
from homeport.store.database import SCHEMA_REVISION, Store
from homeport.store.decisions import insert_decision
from homeport.store.links import insert_link
from homeport.store.patterns import upsert_system_pattern
from homeport.store.progress import insert_progress, overwrite_progress
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

__all__ = ["DEFAULT_EXPORT_DIR", "export_memory", "import_memory", "inside_workspace"]

DEFAULT_EXPORT_DIR = ".homeport/export"
FORMAT_VERSION = 1
Format = Literal["json", "markdown"]
# section -> (text fields rendered as Markdown, fields carried as JSON metadata)
_SECTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "decisions": (("summary", "rationale", "implementation_details"), ("id", "tags", "created_at", "updated_at")),
    "progress": (("description",), ("id", "status", "parent_id", "created_at", "updated_at")),
    "system_patterns": (("name", "description"), ("id", "tags", "created_at", "updated_at")),
    "custom_data": ((), ("id", "category", "key", "value", "created_at", "updated_at")),
    "product_context": ((), ("version", "content", "changed_at")),
    "active_context": ((), ("version", "content", "changed_at")),
    "links": (
        ("description",),
        ("id", "source_type", "source_id", "target_type", "target_id", "relationship", "created_at"),
    ),
}
_ITEM = re.compile(r"<!-- item (\{.*?\}) -->\n(.*?)<!-- end item -->", re.S)
_FIELD = re.compile(r"<!-- field (\w+) -->\n(.*?)\n<!-- end \1 -->", re.S)


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
            f"directory {given!r} resolves to {resolved}, outside the workspace {root}; "
            "use a path inside the workspace (default: .homeport/export)"
        )
    return resolved


def export_memory(
    store: Store | None, root: Path, *, fmt: Format = "json", output_dir: str | None = None
) -> dict[str, Any]:
    """Write the memory of the workspace under `output_dir`; returns the files and item counts.

    Raises:
        InvalidItemError: an unknown format, or an output directory outside the workspace.
    """
    if fmt not in ("json", "markdown"):
        raise InvalidItemError(f"format {fmt!r} is not json or markdown")
    target = inside_workspace(root, output_dir, DEFAULT_EXPORT_DIR)
    data = _collect(store)
    files = []
    manifest = {
        "format": fmt,
        "format_version": FORMAT_VERSION,
        "schema_revision": SCHEMA_REVISION,
        "exported_at": now(),
        "counts": {k: len(v) for k, v in data.items()},
    }
    try:
        target.mkdir(parents=True, exist_ok=True)
        for section, items in data.items():
            name = f"{section}.{'json' if fmt == 'json' else 'md'}"
            body = (
                json.dumps(items, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
                if fmt == "json"
                else _to_markdown(section, items)
            )
            _write_atomic(target / name, body)
            files.append(name)
        _write_atomic(target / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    except OSError as exc:
        raise InvalidItemError(
            f"cannot export to {target}: {exc.strerror or exc}; choose a directory inside the "
            "workspace that is not a file"
        ) from exc
    return {"output_dir": str(target), "files": ["manifest.json", *files], **manifest}


def import_memory(
    store: Store,
    root: Path,
    *,
    input_dir: str | None = None,
    mode: Literal["merge", "replace"] = "merge",
    screen: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Read an export back, in one transaction. `replace` empties the memory first; `merge` keeps it
    and overwrites items with the same id (custom data: same category and key; patterns: same name).
    `screen(data)` sees everything read, by section, before anything is written, and may refuse it.

    Raises:
        InvalidItemError: a missing or unreadable export, an unknown mode, or an invalid item.
        HomeportError: whatever `screen` raises.
    """
    if mode not in ("merge", "replace"):
        raise InvalidItemError(f"mode {mode!r} is not merge or replace")
    source = inside_workspace(root, input_dir, DEFAULT_EXPORT_DIR)
    try:
        manifest = json.loads((source / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidItemError(f"{source} holds no readable manifest.json; export there first ({exc})") from None
    data = {section: _read_section(source, section, manifest.get("format", "json")) for section in _SECTIONS}
    if screen is not None:
        screen(data)
    with store.write() as conn:
        if mode == "replace":
            for table in (links, item_tags, context_history, contexts, custom_data, system_patterns, decisions):
                conn.execute(delete(table))
            conn.execute(delete(progress).where(progress.c.parent_id.is_not(None)))
            conn.execute(delete(progress))
            conn.exec_driver_sql("DELETE FROM search_index")
        counts = _load(conn, data, replace=mode == "replace")
    return {"input_dir": str(source), "mode": mode, "counts": counts}


def _collect(store: Store | None) -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = {s: [] for s in _SECTIONS}
    if store is None:
        return data
    with store.read() as conn:
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
    try:
        for d in data["decisions"]:
            if not replace:
                _drop_existing(conn, decisions, "decision", d["id"])
            insert_decision(
                conn,
                d["summary"],
                rationale=d.get("rationale"),
                tags=d.get("tags"),
                implementation_details=d.get("implementation_details"),
                item_id=d["id"],
                created_at=d["created_at"],
                updated_at=d["updated_at"],
            )
        _load_progress(conn, data["progress"])
        # Patterns match by name and custom data by category and key, so they may keep another local
        # id; links follow them through this map.
        local_ids: dict[tuple[str, int], int] = {}
        for s in data["system_patterns"]:
            written = upsert_system_pattern(
                conn,
                s["name"],
                s["description"],
                tags=s.get("tags") or [],
                item_id=_free_id(conn, system_patterns, s["id"]),
                created_at=s["created_at"],
                updated_at=s["updated_at"],
            )
            local_ids[("system_pattern", s["id"])] = written["id"]
        for c in data["custom_data"]:
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
            _load_context(conn, kind, data[f"{kind}_context"])
        for link in data["links"]:
            source = local_ids.get((link["source_type"], link["source_id"]), link["source_id"])
            target = local_ids.get((link["target_type"], link["target_id"]), link["target_id"])
            result = insert_link(
                conn,
                link["source_type"],
                source,
                link["target_type"],
                target,
                link["relationship"],
                description=link.get("description"),
                created_at=link["created_at"],
            )
            wanted = _free_id(conn, links, link["id"])
            if result["created"] and wanted is not None and wanted != result["id"]:
                conn.execute(links.update().where(links.c.id == result["id"]).values(id=wanted))
    except (KeyError, TypeError, UnicodeError) as exc:
        raise InvalidItemError(
            f"the export is missing a field, has a wrong type or text that is not valid Unicode: "
            f"{exc}; nothing was imported"
        ) from exc
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
    elif load_json(current) != versions[-1]["content"]:
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


def _to_markdown(section: str, items: list[dict[str, Any]]) -> str:
    text_fields, _ = _SECTIONS[section]
    lines = ["---", f"type: {section}", f"count: {len(items)}", "---", "", f"# {section.replace('_', ' ').title()}", ""]
    for item in items:
        meta = {k: v for k, v in item.items() if k not in text_fields}
        fenced = {}
        for field in text_fields:
            value = item.get(field)
            if value is None:
                continue
            if "<!--" in value:  # would confuse the item and field markers: carry it in the metadata
                meta.setdefault("_text", {})[field] = value
            else:
                fenced[field] = value
        # < and > escaped inside the JSON, so no value can close the comment early.
        lines.append(f"<!-- item {_comment_safe(dump_json(meta))} -->")
        lines.append(f"## {_heading(section, item)}")
        for field, value in fenced.items():
            lines += [f"<!-- field {field} -->", value, f"<!-- end {field} -->"]
        if section in ("custom_data", "product_context", "active_context"):
            shown = item["value"] if section == "custom_data" else item["content"]
            lines += ["```json", _comment_safe(json.dumps(shown, indent=2, ensure_ascii=False, sort_keys=True)), "```"]
        lines += ["<!-- end item -->", ""]
    return "\n".join(lines)


def _comment_safe(text: str) -> str:
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def _heading(section: str, item: dict[str, Any]) -> str:
    one_line = {
        "decisions": lambda i: f"{i['summary']} (decision {i['id']})",
        "progress": lambda i: f"[{i['status']}] {i['description']} (progress {i['id']})",
        "system_patterns": lambda i: f"{i['name']} (pattern {i['id']})",
        "custom_data": lambda i: f"{i['category']} / {i['key']}",
        "product_context": lambda i: f"Version {i['version']}",
        "active_context": lambda i: f"Version {i['version']}",
        "links": lambda i: (
            f"{i['source_type']} {i['source_id']} {i['relationship']} {i['target_type']} {i['target_id']}"
        ),
    }[section](item)
    # Display only (import reads the metadata and fields): entities keep it from closing a comment.
    return " ".join(one_line.split()).replace("<", "&lt;").replace(">", "&gt;")


def _read_section(source: Path, section: str, fmt: str) -> list[dict[str, Any]]:
    path = source / f"{section}.{'json' if fmt == 'json' else 'md'}"
    if not path.exists():
        return []
    try:
        with path.open(encoding="utf-8", newline="") as handle:  # keep \r in text fields as written
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidItemError(f"cannot read {path}: {exc}; export again, or fix the file by hand") from None
    try:
        if fmt == "json":
            return _storable(path, json.loads(text))
        metas = [(json.loads(meta_text), body) for meta_text, body in _ITEM.findall(text)]
    except ValueError as exc:
        raise InvalidItemError(f"{path} is not valid JSON: {exc}; export again, or fix the file by hand") from None
    items = []
    for item, body in metas:
        item.update(item.pop("_text", {}))
        for field, value in _FIELD.findall(body):
            item[field] = value
        items.append(item)
    return _storable(path, items)


def _storable(path: Path, items: Any) -> list[dict[str, Any]]:
    """Refuse text the store cannot keep (lone surrogates such as \\udcff from a JSON escape)."""
    try:
        json.dumps(items, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidItemError(f"{path} holds text that is not valid Unicode ({exc.reason}); fix the file") from None
    stored: list[dict[str, Any]] = items
    return stored


def _write_atomic(path: Path, body: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(body)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
