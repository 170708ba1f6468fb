"""Import agent instruction files: CLAUDE.md, AGENTS.md, `.cursorrules`, `.github/copilot-instructions.md`.

Each file is split by heading (`_markdown_sections`). A section that is a rule or convention
(`is_rule`) becomes a system pattern: name = the heading path ("Testing > Fixtures"),
description = the section's text, then a last line `source: CLAUDE.md:12`, tags `markdown` and
the file. Any other section becomes custom data in the category `ProjectInstructions`: key = the
heading path, value = `{"text": ..., "source": "CLAUDE.md:12"}`. A file's text before its first
heading is named after the file. Two sections with the same name get the file (and line) added.

Importing again is idempotent and follows the file: a section whose text changed is `updated`, one
whose text is the same but now starts on another line is `moved` (its source is rewritten), the
rest `unchanged`. An item of the same name that did not come from this file is left as it is and
listed in `skipped`; items that came from the file but whose section is gone are listed in
`stale` and left in place.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, select

from homeport.errors import InvalidItemError
from homeport.store._common import load_json
from homeport.store._importing import Progress, Summary, import_transaction
from homeport.store._markdown_sections import Section, is_rule, split_sections
from homeport.store.custom_data import upsert_custom_data
from homeport.store.database import Store
from homeport.store.patterns import upsert_system_pattern
from homeport.store.schema import custom_data, system_patterns

__all__ = ["INSTRUCTION_FILES", "Instructions", "import_instructions", "read_instructions"]

KIND = "markdown"
SOURCE_TAG = "markdown"
CATEGORY = "ProjectInstructions"
INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md", ".cursorrules", ".github/copilot-instructions.md")
_NESTED = frozenset({"CLAUDE.md", "AGENTS.md"})  # also found in subdirectories
_NOT_SEARCHED = frozenset({"node_modules", "__pycache__", "site-packages", "venv", "dist", "build"})
MAX_FILE_BYTES = 1_000_000
MAX_FILES = 200


@dataclass
class Item:
    """A section ready to write: where it comes from, what it becomes."""

    file: str
    section: Section
    name: str
    item_type: str  # "system_pattern" | "custom_data"

    @property
    def source(self) -> str:
        return f"{self.file}:{self.section.line}"

    @property
    def text(self) -> str:
        return self.section.text or self.section.path[-1]  # a heading with no text stands for itself


@dataclass
class Instructions:
    """The instruction files found under a source, split into items."""

    path: Path
    files: list[str] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def texts(self) -> dict[str, Any]:
        """What would be written, by file and item name, for the secret check."""
        out: dict[str, dict[str, str]] = {}
        for item in self.items:
            out.setdefault(item.file, {})[item.name] = item.text
        return out


def read_instructions(path: Path, *, base: Path | None = None, within: Path | None = None) -> Instructions:
    """The items of one instructions file, or of every one found in a directory.

    Files are named relative to `base` (default: the directory, or the file's own directory).
    With `within`, a file that resolves outside it (a symlink) is skipped.

    Raises:
        InvalidItemError: `path` is neither a file nor a directory, or a single file cannot be read.
    """
    found = Instructions(path)
    if path.is_dir():
        base = base or path
        files = sorted(_find(path), key=lambda p: (len(p.relative_to(path).parts), str(p)))
        for extra in files[MAX_FILES:]:
            found.skipped.append({"where": _label(extra, base), "item": "file", "reason": f"over {MAX_FILES} files"})
        for file in files[:MAX_FILES]:
            _read_file(found, file, _label(file, base), within, single=False)
    elif path.is_file():
        _read_file(found, path, _label(path, base or path.parent), within, single=True)
    else:
        raise InvalidItemError(
            f"{path} is neither a file nor a directory; pass CLAUDE.md, AGENTS.md, .cursorrules, "
            ".github/copilot-instructions.md or the directory that holds them"
        )
    _name_items(found.items)
    return found


def _find(root: Path) -> list[Path]:
    hits = [root / name for name in INSTRUCTION_FILES if (root / name).is_file()]
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in _NOT_SEARCHED)
        if Path(directory) != root:
            hits.extend(Path(directory) / n for n in sorted(names) if n in _NESTED)
    return hits


def _label(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.name


def _read_file(found: Instructions, path: Path, label: str, within: Path | None, *, single: bool) -> None:
    def refuse(why: str) -> None:
        if single:
            raise InvalidItemError(f"{path}: {why}")
        found.skipped.append({"where": label, "item": "file", "reason": why})

    real = Path(os.path.realpath(path))
    if within is not None and real != within and within not in real.parents:
        return refuse(f"it resolves to {real}, outside the workspace {within}")
    try:
        if not real.is_file():
            return refuse("not a regular file")
        if real.stat().st_size > MAX_FILE_BYTES:
            return refuse(f"over {MAX_FILE_BYTES:,} bytes")
        text = real.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return refuse(f"cannot be read as UTF-8 text ({exc})")
    found.files.append(label)
    file_name = Path(label).name
    for section in split_sections(text):
        item_type = "system_pattern" if is_rule(section, file_name) else "custom_data"
        found.items.append(Item(label, section, " > ".join(section.path) or label, item_type))


def _name_items(items: list[Item]) -> None:
    """Make names unique per item type (the store's key): the file, then the line, is added to a repeat."""
    seen: set[tuple[str, str]] = set()
    for item in items:
        for name in (item.name, f"{item.name} ({item.file})", f"{item.name} ({item.source})"):
            if (item.item_type, name.casefold()) not in seen:
                break
        item.name = name
        seen.add((item.item_type, name.casefold()))


def import_instructions(
    store: Store, found: Instructions, *, dry_run: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Write the items into the store in one transaction (rolled back when `dry_run`); returns the summary."""
    summary = Summary(KIND, found.path, dry_run=dry_run, progress=progress, total=len(found.items))
    summary.data["skipped"].extend(found.skipped)
    summary.data.update(files=found.files, moved=0, stale=[])

    def body(conn: Connection) -> None:
        for item in found.items:
            with summary.item(conn, item.source, item.name):
                if item.item_type == "system_pattern":
                    _pattern(conn, item, summary)
                else:
                    _instruction(conn, item, summary)
            summary.step()
        summary.data["stale"] = _stale(conn, found)

    return import_transaction(store, summary, body)


def _source_line(description: str) -> str | None:
    last = description.rsplit("\n", 1)[-1]
    return last.removeprefix("source: ") if last.startswith("source: ") else None


def _from_file(source: Any, file: str) -> bool:
    return isinstance(source, str) and source.rsplit(":", 1)[0] == file


def _pattern(conn: Connection, item: Item, summary: Summary) -> None:
    description = f"{item.text}\n\nsource: {item.source}"
    existing = conn.execute(
        select(system_patterns.c.id, system_patterns.c.description).where(
            system_patterns.c.name_key == item.name.casefold()
        )
    ).first()
    if existing is None:
        written = upsert_system_pattern(conn, item.name, description, tags=[SOURCE_TAG, item.file])
        return _count(summary, item, int(written["id"]), "created")
    if existing.description == description:
        return _count(summary, item, existing.id, "unchanged")
    if not _from_file(_source_line(existing.description), item.file):
        return summary.skip(item.source, item.name, "a system pattern of this name that did not come from the file")
    same_text = existing.description.rsplit("\n\nsource: ", 1)[0] == item.text
    upsert_system_pattern(conn, item.name, description)
    _count(summary, item, existing.id, "moved" if same_text else "updated")


def _instruction(conn: Connection, item: Item, summary: Summary) -> None:
    value = {"text": item.text, "source": item.source}
    existing = conn.execute(
        select(custom_data.c.id, custom_data.c.value).where(
            custom_data.c.category == CATEGORY, custom_data.c.key == item.name
        )
    ).first()
    if existing is None:
        written = upsert_custom_data(conn, CATEGORY, item.name, value)
        return _count(summary, item, int(written["id"]), "created")
    stored = load_json(existing.value)
    if stored == value:
        return _count(summary, item, existing.id, "unchanged")
    if not isinstance(stored, dict) or not _from_file(stored.get("source"), item.file):
        return summary.skip(
            item.source, item.name, f"custom data {CATEGORY}/{item.name} that did not come from the file"
        )
    upsert_custom_data(conn, CATEGORY, item.name, value)
    _count(summary, item, existing.id, "moved" if stored.get("text") == item.text else "updated")


def _count(summary: Summary, item: Item, item_id: int, action: str) -> None:
    details = {"id": item_id, "name": item.name, "source": item.source}
    if action == "moved":
        summary.data["moved"] += 1
        summary.listed(item.item_type, action, details)
    else:
        summary.count(item.item_type, action, details)


def _stale(conn: Connection, found: Instructions) -> list[dict[str, Any]]:
    """Items that came from the imported files but whose section is no longer there (left in place)."""
    current = {(i.item_type, i.name.casefold()) for i in found.items}
    files = set(found.files)
    stale: list[dict[str, Any]] = []
    for row in conn.execute(
        select(system_patterns.c.id, system_patterns.c.name, system_patterns.c.description).where(
            system_patterns.c.description.contains("\n\nsource: ")
        )
    ):
        source = _source_line(row.description)
        if source and source.rsplit(":", 1)[0] in files and ("system_pattern", row.name.casefold()) not in current:
            stale.append({"type": "system_pattern", "id": row.id, "name": row.name, "source": source})
    for row in conn.execute(
        select(custom_data.c.id, custom_data.c.key, custom_data.c.value).where(custom_data.c.category == CATEGORY)
    ):
        value = load_json(row.value)
        source = value.get("source") if isinstance(value, dict) else None
        if (
            isinstance(source, str)
            and source.rsplit(":", 1)[0] in files
            and ("custom_data", row.key.casefold()) not in current
        ):
            stale.append({"type": "custom_data", "id": row.id, "name": row.key, "source": source})
    return stale
