"""What an export carries beside the items (format version 2): their history, lifecycle and provenance.

An item's current text is not all a memory acknowledged: every version of every item (`item_versions`,
including the versions of deleted items, which outlive them until purged), who wrote the context
versions and links (`item_writers`), lifecycle state (`item_states`: archived, superseded, valid until,
pinned), tidy changesets (`changesets`), branch provenance (`item_branches`) and citations
(`item_citations`). Each is carried as its table's rows, column for column, ordered by key, so an export
imported into an empty store exports again byte for byte, and `homeport copy` compares them in its checksum.

An import validates every row against its table's columns (names, types, lengths, nullability, unique
key) before anything is written, then, inside the import's transaction, once the items are written:

- `replace`: the tables were emptied with the memory; what the item writes of the import added
  (a version 1 of each item, writer rows) is replaced by the exported rows.
- `merge`: rows follow their item (a pattern or custom data entry may have another local id). An item
  that had rows of a table before the import keeps its own (its local history stays, and the import
  added a version as any write does); one that had none gets the exported rows. Changesets keep their
  id when it is free, else take a new one, and the states naming them follow.

Either way an item whose newest exported version is not what the import wrote (a hand-edited export, an
item without history) gets that write as its next version: the newest version is always the item.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sqlalchemy import Boolean, Connection, Integer, Table, delete, insert, select

from homeport.errors import InvalidItemError
from homeport.store._transfer_read import read_section_file
from homeport.store.database import advance_sequence
from homeport.store.schema import (
    changesets,
    custom_data,
    decisions,
    item_branches,
    item_citations,
    item_states,
    item_versions,
    item_writers,
    progress,
    system_patterns,
)

__all__ = ["HISTORY", "collect_history", "insert_history", "load_history", "read_history"]

# section (file name) -> table; written in this order on import (changesets before the states naming them)
HISTORY: dict[str, Table] = {
    "item_versions": item_versions,
    "item_writers": item_writers,
    "changesets": changesets,
    "item_states": item_states,
    "item_branches": item_branches,
    "item_citations": item_citations,
}
# Item type -> its table: the id sequence a deleted item's versions must keep ahead of.
_ITEM_TABLES = {
    "decision": decisions,
    "progress": progress,
    "system_pattern": system_patterns,
    "custom_data": custom_data,
}


def _order(table: Table) -> list[Any]:
    if "id" in table.c:
        return [table.c.id]
    return list(table.primary_key.columns)


def collect_history(conn: Connection) -> dict[str, list[dict[str, Any]]]:
    """Every row of the history tables, by section, ordered by key, booleans as booleans."""
    out: dict[str, list[dict[str, Any]]] = {}
    for section, table in HISTORY.items():
        rows = conn.execute(select(table).order_by(*_order(table))).all()
        names = [str(c.name) for c in table.columns]
        flags = [str(c.name) for c in table.columns if isinstance(c.type, Boolean)]
        section_rows = []
        for row in rows:
            item = dict(zip(names, row, strict=True))
            for name in flags:
                item[name] = bool(item[name])
            section_rows.append(item)
        out[section] = section_rows
    return out


def read_history(root: Path, source: Path, section: str, fmt: str) -> list[dict[str, Any]]:
    """The validated rows of one history section of an export (none if its file is absent).

    Raises:
        InvalidItemError: an unreadable or malformed file, or a row that does not fit its table, named.
    """
    path, rows = read_section_file(root, source, section, fmt, (), "rows")
    table = HISTORY[section]
    valid = [_validate(path, table, index, line, row) for index, (line, row) in enumerate(rows)]
    keys = [str(c.name) for c in _order(table)]
    if section == "item_states" or section == "item_branches":
        keys = ["item_type", "item_id"]
    seen: dict[tuple[Any, ...], int] = {}
    for index, row in enumerate(valid):
        key = tuple(row[k] for k in keys)
        if key in seen:
            named = dict(zip(keys, key, strict=True))
            raise InvalidItemError(f"{path} rows {seen[key]} and {index} both have {named}; keep one")
        seen[key] = index
    return valid


def _validate(path: Path, table: Table, index: int, line: int | None, row: Any) -> dict[str, Any]:
    where = f"{path} row {index}" + (f" (line {line})" if line else "")
    if not isinstance(row, dict):
        raise InvalidItemError(f"{where} is a {type(row).__name__}, not an object; nothing was imported")
    names = {str(c.name) for c in table.columns}
    unknown = sorted(set(row) - names)
    if unknown:
        raise InvalidItemError(f"{where}: unknown field(s) {', '.join(unknown)} (misspelt, or from a newer Homeport)")
    out: dict[str, Any] = {}
    for column in table.columns:
        name = str(column.name)
        value = row.get(name)
        if name not in row and not (column.nullable or (name == "id" and column.autoincrement)):
            raise InvalidItemError(f"{where}: field {name} is missing; nothing was imported")
        if value is None:
            if not column.nullable and name != "id":
                raise InvalidItemError(f"{where}: field {name} is null, and {table.name} needs a value")
        elif isinstance(column.type, Boolean):
            if not isinstance(value, bool):
                raise InvalidItemError(f"{where}: field {name} is a {type(value).__name__}, not true or false")
        elif isinstance(column.type, Integer):
            if isinstance(value, bool) or not isinstance(value, int) or abs(value) >= 2**31:
                raise InvalidItemError(f"{where}: field {name} is {value!r}, not a whole number")
        else:
            if not isinstance(value, str):
                raise InvalidItemError(f"{where}: field {name} is a {type(value).__name__}, not text")
            limit = getattr(column.type, "length", None)
            if limit is not None and len(value) > limit:
                raise InvalidItemError(f"{where}: field {name} is {len(value)} characters, over {limit}")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidItemError(f"{where}: field {name} is not valid Unicode ({exc.reason})") from None
        out[name] = value
    return out


def load_history(
    conn: Connection,
    data: dict[str, list[dict[str, Any]]],
    *,
    local_ids: dict[tuple[str, int], int],
    had: dict[str, set[tuple[str, int]]],
    replace: bool,
) -> dict[str, int]:
    """Write the exported history rows inside the import's transaction, after the items (see the module).

    `local_ids` maps an exported (type, id) to the local id it was written under, where they differ;
    `had` is, per item-keyed table, the (type, id) that held rows before the import. Returns the rows
    kept out because the local item already had its own, by section.
    """
    skipped: dict[str, int] = {}

    def local(item_type: str | None, item_id: int | None) -> int | None:
        if item_type is None or item_id is None:
            return item_id
        return local_ids.get((item_type, item_id), item_id)

    if replace:  # the import's own writer rows: the export's stand for them
        conn.execute(delete(item_writers))
    changeset_ids: dict[int, int] = {}
    for row in data.get("changesets", []):
        same = conn.execute(  # merging an export twice adds nothing the first merge added
            select(changesets.c.id).where(
                changesets.c.created_at == row["created_at"], changesets.c.entries == row["entries"]
            )
        ).first()
        if same is not None:
            changeset_ids[row["id"]] = int(same.id)
            continue
        taken = conn.execute(select(changesets.c.id).where(changesets.c.id == row["id"])).first() is not None
        values = {k: v for k, v in row.items() if not (taken and k == "id")}
        new_id = conn.execute(insert(changesets).values(**values)).inserted_primary_key[0]  # type: ignore[index]
        changeset_ids[row["id"]] = int(new_id)
        if conn.dialect.name != "sqlite" and not taken:
            advance_sequence(conn, "changesets", row["id"])
    for section in ("item_versions", "item_writers", "item_states", "item_branches", "item_citations"):
        table = HISTORY[section]
        groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for row in data.get(section, []):
            item_id = local(row["item_type"], row["item_id"])
            assert item_id is not None
            groups.setdefault((row["item_type"], item_id), []).append(row)
        rows: list[dict[str, Any]] = []
        for (item_type, item_id), group in groups.items():
            if (item_type, item_id) in had[section]:
                skipped[section] = skipped.get(section, 0) + len(group)
                if section == "item_versions":
                    _drop_repeated_version(conn, item_type, item_id)
                continue
            if section == "item_versions":
                _replace_versions(conn, item_type, item_id, group)
                continue
            conn.execute(delete(table).where(table.c.item_type == item_type, table.c.item_id == item_id))
            for row in group:
                out = {**row, "item_id": item_id}
                if section == "item_states":
                    out["superseded_id"] = local(row["superseded_type"], row["superseded_id"])
                    if row["changeset_id"] is not None:
                        out["changeset_id"] = changeset_ids.get(row["changeset_id"], row["changeset_id"])
                rows.append(out)
        if not rows:
            continue
        if "id" in table.c:
            free = _free_ids(conn, table, [r["id"] for r in rows])
            for r in rows:
                if r["id"] not in free:
                    r.pop("id")
            with_id = [r for r in rows if "id" in r]
            if with_id:
                conn.execute(insert(table), with_id)
                if conn.dialect.name != "sqlite":
                    advance_sequence(conn, table.name, max(r["id"] for r in with_id))
            for r in rows:
                if "id" not in r:
                    conn.execute(insert(table).values(**r))
        else:
            conn.execute(insert(table), rows)
    _keep_ids_ahead(conn, data.get("item_versions", []), local)
    return skipped


def insert_history(conn: Connection, section: str, rows: list[dict[str, Any]]) -> None:
    """Insert rows of one history section as they are, ids included (`homeport copy` into an empty target)."""
    if not rows:
        return
    table = HISTORY[section]
    conn.execute(insert(table), rows)
    if "id" in table.c and conn.dialect.name != "sqlite":
        advance_sequence(conn, table.name, max(r["id"] for r in rows))
    if section == "item_versions":
        _keep_ids_ahead(conn, rows, lambda _type, item_id: item_id)


def _replace_versions(conn: Connection, item_type: str, item_id: int, group: list[dict[str, Any]]) -> None:
    """The item's exported versions stand for the version 1 its import wrote; that write follows them
    only when it differs from the newest (or the item is not deleted while the newest says it is)."""
    c = item_versions.c
    where = (c.item_type == item_type, c.item_id == item_id)
    written = conn.execute(select(item_versions).where(*where).order_by(c.version.desc())).first()
    conn.execute(delete(item_versions).where(*where))
    group = sorted(group, key=lambda r: r["version"])
    conn.execute(insert(item_versions), [{**r, "item_id": item_id} for r in group])
    if written is None:  # a deleted item's history: nothing was written for it now
        return
    newest = group[-1]
    if newest["fields"] != written.fields or bool(newest["deleted"]) != bool(written.deleted):
        row = dict(zip([str(k) for k in written._fields], written, strict=True))
        conn.execute(insert(item_versions).values(**{**row, "version": newest["version"] + 1}))


def _drop_repeated_version(conn: Connection, item_type: str, item_id: int) -> None:
    """A merge that rewrote a local item as it already was adds no version (merging twice changes nothing)."""
    c = item_versions.c
    newest = conn.execute(
        select(item_versions).where(c.item_type == item_type, c.item_id == item_id).order_by(c.version.desc()).limit(2)
    ).all()
    if len(newest) == 2 and newest[0].fields == newest[1].fields and not newest[0].deleted and not newest[1].deleted:
        conn.execute(
            delete(item_versions).where(c.item_type == item_type, c.item_id == item_id, c.version == newest[0].version)
        )


def _free_ids(conn: Connection, table: Table, ids: Iterable[int]) -> set[int]:
    wanted = set(ids)
    taken: set[int] = set()
    chunk = sorted(wanted)
    for start in range(0, len(chunk), 500):
        taken |= set(conn.execute(select(table.c.id).where(table.c.id.in_(chunk[start : start + 500]))).scalars())
    return wanted - taken


def _keep_ids_ahead(conn: Connection, versions: list[dict[str, Any]], local: Any) -> None:
    """A deleted item keeps its id: new items are numbered after the highest id any history names."""
    highest: dict[str, int] = {}
    for row in versions:
        item_id = local(row["item_type"], row["item_id"])
        if row["item_type"] in _ITEM_TABLES:
            highest[row["item_type"]] = max(highest.get(row["item_type"], 0), item_id)
    for item_type, item_id in highest.items():
        name = _ITEM_TABLES[item_type].name
        if conn.dialect.name == "sqlite":
            current = conn.exec_driver_sql("SELECT seq FROM sqlite_sequence WHERE name = ?", (name,)).scalar()
            if current is None:
                conn.exec_driver_sql("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (name, item_id))
            elif current < item_id:
                conn.exec_driver_sql("UPDATE sqlite_sequence SET seq = ? WHERE name = ?", (item_id, name))
        else:
            advance_sequence(conn, name, item_id)
            # The shared PostgreSQL layout numbers ids in a trigger, after the highest deleted one it was told of.
            if conn.exec_driver_sql("SELECT to_regclass('id_counters')").scalar() is not None:
                conn.exec_driver_sql(
                    "INSERT INTO id_counters AS c (tbl, last) VALUES (%(t)s, %(n)s) "
                    "ON CONFLICT (ws, tbl) DO UPDATE SET last = greatest(c.last, EXCLUDED.last)",
                    {"t": name, "n": item_id},
                )
