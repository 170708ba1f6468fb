"""The citations of items to the project's code, as anchored when written (table `item_citations`).

The store keeps anchors, never statuses: whether a citation is fresh depends on the files now, which
`homeport.citations` reads and `homeport.core.citing` compares on every read. Writing an item with
`cites` replaces its citations in the item's own write transaction (`replace`); writing it without
`cites` keeps them. A deleted item's citations stay with its history (restore_version brings the item
back under its id, and with it its citations) and are left out of `cited_items`.

A row, as `rows_of` returns it and `replace` takes it:

    path, start_line, end_line   workspace-relative POSIX path, 1-based inclusive lines
    symbol                       the definition cited, or the innermost one around the lines (or None)
    blob_id                      the file's git blob id when cited
    span_hash                    SHA-256 of the span's normalised lines
    line_keys                    each normalised line's 64-bit key, hex, space-separated
    span_chars, quote            the span's normalised length; its first non-blank line, shortened
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, String, and_, bindparam, delete, exists, insert, select, update

from homeport.store._common import now
from homeport.store.database import ByIds, Store, driver
from homeport.store.items import require_item
from homeport.store.schema import custom_data, decisions, item_citations, progress, system_patterns

__all__ = [
    "ANCHOR_FIELDS",
    "CITABLE_TYPES",
    "cited_items",
    "confirm",
    "replace",
    "rows_of",
    "set_citations",
    "write_with_citations",
]

CITABLE_TYPES = ("decision", "progress", "system_pattern", "custom_data")
ANCHOR_FIELDS = (
    "path",
    "start_line",
    "end_line",
    "symbol",
    "blob_id",
    "span_hash",
    "line_keys",
    "span_chars",
    "quote",
)
_TABLES = {"decision": decisions, "progress": progress, "system_pattern": system_patterns, "custom_data": custom_data}
_c = item_citations.c
_COLUMNS = (_c.item_id, _c.position, *(_c[name] for name in ANCHOR_FIELDS), _c.cited_at, _c.confirmed_at)
_BY_IDS = ByIds(
    lambda ids_in: select(*_COLUMNS).where(_c.item_type == bindparam("item_type", type_=String), ids_in(_c.item_id))
)


def replace(conn: Connection, item_type: str, item_id: int, anchors: Sequence[dict[str, Any]]) -> None:
    """Make `anchors` the item's citations, in order, inside the item's write transaction."""
    conn.execute(delete(item_citations).where(_c.item_type == item_type, _c.item_id == item_id))
    if not anchors:
        return
    stamp = now()
    rows = [
        {
            "item_type": item_type,
            "item_id": item_id,
            "position": position,
            **{name: anchor.get(name) for name in ANCHOR_FIELDS},
            "cited_at": stamp,
            "confirmed_at": None,
        }
        for position, anchor in enumerate(anchors)
    ]
    conn.execute(insert(item_citations), rows)


def write_with_citations(
    store: Store,
    item_type: str,
    citations: Sequence[dict[str, Any]] | None,
    write: Callable[[Connection], dict[str, Any]],
) -> dict[str, Any]:
    """Run an item module's write (`write(conn)` returns the item with its `id`) and, in the same
    transaction, make `citations` its citations (None keeps them)."""
    with store.write() as conn:
        written = write(conn)
        if citations is not None:
            replace(conn, item_type, written["id"], citations)
    return written


def set_citations(store: Store, item_type: str, item_id: int, citations: Sequence[dict[str, Any]]) -> None:
    """Make `citations` an existing item's citations.

    Raises:
        ItemNotFoundError: no such item.
    """
    with store.write() as conn:
        require_item(conn, item_type, item_id)
        replace(conn, item_type, item_id, citations)


def rows_of(store: Store | None, item_type: str, item_ids: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
    """The citations of some items, by item id, each list in the order they were given."""
    ids = list(item_ids)
    if store is None or not ids:
        return {}
    with store.read() as conn:
        mark = _mark(conn)
        if mark is not None and conn.info.get(_EMPTY) == mark:
            return {}  # this connection found no citations at all, and nothing was committed since
        found = list(_BY_IDS.run(conn, {"ids": ids, "item_type": item_type}))
        if not found and mark is not None and driver(conn).execute(_ANY).fetchone() is None:
            conn.info[_EMPTY] = mark
        out: dict[int, list[dict[str, Any]]] = {}
        names = ("item_id", "position", *ANCHOR_FIELDS, "cited_at", "confirmed_at")
        for row in found:
            record = dict(zip(names, row, strict=True))
            out.setdefault(record.pop("item_id"), []).append(record)
    for rows in out.values():
        rows.sort(key=lambda r: r["position"])
    return out


# Most stores have no citations, and every read of items asks for theirs. On SQLite a connection
# remembers that it found the table empty, with `PRAGMA data_version` (changes when another connection
# commits) and `total_changes` (this one wrote) at that moment: while both are the same, the table is
# still empty and the query is skipped (as homeport.store.vectors skips its count). PostgreSQL asks.
_EMPTY = "homeport_citations_empty"
_ANY = "SELECT 1 FROM item_citations LIMIT 1"


def _mark(conn: Connection) -> tuple[int, int] | None:
    if conn.dialect.name != "sqlite":
        return None
    raw = driver(conn)
    return int(raw.execute("PRAGMA data_version").fetchone()[0]), raw.total_changes


def cited_items(store: Store | None, *, only: tuple[str, int] | None = None) -> list[tuple[str, int, str]]:
    """Every existing item that has citations (or just `only`, if it exists and has some): type, id, title."""
    if store is None:
        return []
    found: list[tuple[str, int, str]] = []
    with store.read() as conn:
        for item_type, table in _TABLES.items():
            if only is not None and only[0] != item_type:
                continue
            stmt = (
                select(table.c.id, _TITLES[item_type](table))
                .where(exists().where(_c.item_type == item_type, _c.item_id == table.c.id))
                .order_by(table.c.id)
            )
            if only is not None:
                stmt = stmt.where(table.c.id == only[1])
            found.extend((item_type, int(row[0]), str(row[1])) for row in conn.execute(stmt))
    return found


_TITLES = {
    "decision": lambda t: t.c.summary,
    "progress": lambda t: t.c.description,
    "system_pattern": lambda t: t.c.name,
    "custom_data": lambda t: t.c.category + "/" + t.c.key,
}


def confirm(conn: Connection, item_type: str, item_id: int, anchors: dict[int, dict[str, Any]]) -> str:
    """Record a re-check of an item's citations: `anchors` re-anchors those by position. Returns the time."""
    stamp = now()
    for position, anchor in anchors.items():
        conn.execute(
            update(item_citations)
            .where(_c.item_type == item_type, _c.item_id == item_id, _c.position == position)
            .values(**{name: anchor.get(name) for name in ANCHOR_FIELDS})
        )
    conn.execute(
        update(item_citations).where(and_(_c.item_type == item_type, _c.item_id == item_id)).values(confirmed_at=stamp)
    )
    return stamp
