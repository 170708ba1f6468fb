"""Read a ConPort database (`context_portal/context.db`) read-only, table by table.

Both schemas ConPort has used are read: 0.1's (`CREATE TABLE IF NOT EXISTS`, no timestamps on
patterns and custom data) and the Alembic schema of 0.2 on. A known table without a column the
import needs, and any table ConPort does not make, is reported in `skipped`.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from homeport.errors import InvalidItemError

__all__ = ["ConPortDatabase", "Row", "find_database", "read_conport"]

# Tables ConPort keeps that hold no memory: its full-text indexes (rebuilt by Homeport's own) and
# Alembic's revision.
_NOT_MEMORY = ("alembic_version", "sqlite_sequence", "sqlite_stat1")
_INDEX_PREFIXES = ("decisions_fts", "custom_data_fts")
_REQUIRED = {
    "product_context": ("content",),
    "active_context": ("content",),
    "product_context_history": ("version", "content"),
    "active_context_history": ("version", "content"),
    "decisions": ("id", "summary"),
    "progress_entries": ("id", "status", "description"),
    "system_patterns": ("id", "name"),
    "custom_data": ("id", "category", "key", "value"),
    "context_links": (
        "source_item_type",
        "source_item_id",
        "target_item_type",
        "target_item_id",
        "relationship_type",
    ),
}


Row = dict[str, Any]


@dataclass
class ConPortDatabase:
    """A ConPort database as read: its rows by table, and what was skipped while reading."""

    path: Path
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def table(self, name: str) -> list[dict[str, Any]]:
        return self.rows.get(name, [])

    def total(self) -> int:
        return sum(len(rows) for rows in self.rows.values())

    def texts(self) -> dict[str, Any]:
        """What would be written, by table and row id, for the secret check."""
        return {name: {str(r.get("id", i)): r for i, r in enumerate(rows)} for name, rows in self.rows.items()}


def find_database(path: Path) -> Path:
    """The database file: `path` itself, or `context_portal/context.db` under a directory."""
    if path.is_dir():
        for candidate in (path / "context_portal" / "context.db", path / "context.db"):
            if candidate.is_file():
                return candidate
    return path


def read_conport(path: Path) -> ConPortDatabase:
    """Read every table of the database, opened read-only.

    Raises:
        InvalidItemError: the file is not an SQLite database, or has none of ConPort's tables.
    """
    source = ConPortDatabase(path)
    try:
        # Read-only (`mode=ro`): never a write, a journal or a new empty file; ConPort may be running.
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        raise InvalidItemError(f"cannot open {path}: {exc}; pass ConPort's context_portal/context.db") from None
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        if not set(names) & set(_REQUIRED):
            raise InvalidItemError(
                f"{path} has none of ConPort's tables ({', '.join(sorted(_REQUIRED))}); pass the "
                "context_portal/context.db of a ConPort workspace"
            )
        for name in names:
            _read_table(conn, source, name)
    except sqlite3.DatabaseError as exc:
        raise InvalidItemError(f"cannot read {path}: {exc}; pass ConPort's context_portal/context.db") from None
    finally:
        conn.close()
    return source


def _read_table(conn: sqlite3.Connection, source: ConPortDatabase, name: str) -> None:
    if name in _NOT_MEMORY or name.startswith(_INDEX_PREFIXES):
        return
    quoted = '"' + name.replace('"', '""') + '"'
    if name not in _REQUIRED:
        count = conn.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0]
        source.skipped.append(
            {
                "where": name,
                "item": f"table {name}",
                "reason": f"a table ConPort does not make; its {count} row(s) were not read",
            }
        )
        return
    columns = [r[1] for r in conn.execute(f"PRAGMA table_info({quoted})")]
    missing = [c for c in _REQUIRED[name] if c not in columns]
    if missing:
        source.skipped.append(
            {"where": name, "item": f"table {name}", "reason": f"it has no column {', '.join(missing)}; not read"}
        )
        return
    order = "version" if "version" in columns else ("id" if "id" in columns else "rowid")
    cursor = conn.execute(f"SELECT * FROM {quoted} ORDER BY {order}")
    source.rows[name] = [dict(zip(columns, row, strict=True)) for row in cursor]
