"""Import a ConPort database (`context_portal/context.db`, the `context-portal-mcp` server).

The database is opened read-only. Its tables become Homeport items:

    product_context, active_context      -> the product and active context; with
    + product_/active_context_history       their history as earlier versions (only into a workspace
                                            whose context is empty; one with other content is kept)
    decisions                            -> decisions (summary, rationale, implementation details,
                                            tags + `conport`, the time ConPort logged them)
    progress_entries                     -> progress with the same parent tree and status
    system_patterns                      -> system patterns (no description: the name); tags + `conport`
    custom_data                          -> custom data under the same category and key (ConPort's
                                            ProjectGlossary is Homeport's glossary)
    context_links                        -> links between the imported items

Both schemas ConPort has used are read (before its Alembic migrations some tables have no
timestamp). ConPort's search indexes and migration bookkeeping are not memory and are not read;
any other table is reported in `skipped`. Importing is idempotent, matched on content: an item
that is already there as ConPort has it is `unchanged`; a decision with the same summary, a
pattern with the same name, custom data under the same key or a progress entry with the same
description under the same parent that has other text is left as it is and listed in `skipped`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, select

from homeport.errors import InvalidItemError
from homeport.store._common import dump_json, load_json, now, utc_stamp
from homeport.store._conport_read import ConPortDatabase, find_database, read_conport
from homeport.store._importing import Progress, Summary, import_transaction
from homeport.store.contexts import ContextKind, write_context
from homeport.store.custom_data import upsert_custom_data
from homeport.store.database import Store
from homeport.store.decisions import insert_decision
from homeport.store.links import insert_link
from homeport.store.patterns import upsert_system_pattern
from homeport.store.progress import insert_progress
from homeport.store.schema import contexts, custom_data, decisions, progress, system_patterns

__all__ = ["ConPortDatabase", "find_database", "import_conport", "read_conport"]

SOURCE_TAG = "conport"
KIND = "conport"
# ConPort's item types in context_links -> Homeport's.
_LINK_TYPES = {
    "decision": "decision",
    "progress_entry": "progress",
    "progress": "progress",
    "system_pattern": "system_pattern",
    "custom_data": "custom_data",
    "product_context": "product_context",
    "active_context": "active_context",
}
Version = tuple[dict[str, Any], str | None]  # a context document and when it was written


def import_conport(
    store: Store, source: ConPortDatabase, *, dry_run: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Write the database's memory into the store in one transaction (rolled back when `dry_run`)."""
    summary = Summary(KIND, source.path, dry_run=dry_run, progress=progress, total=source.total())
    summary.data["skipped"].extend(source.skipped)

    def body(conn: Connection) -> None:
        _Importer(conn, source, summary).run()

    return import_transaction(store, summary, body)


class _Importer:
    def __init__(self, conn: Connection, source: ConPortDatabase, summary: Summary) -> None:
        self.conn, self.source, self.summary = conn, source, summary
        # ConPort (table, id) -> Homeport id, for links and parents.
        self.placed: dict[tuple[str, str], int] = {}
        self.created_decisions: set[int] = set()
        # The workspace's decisions and progress by what they are matched on (no index has them).
        self.decisions: dict[str, list[tuple[int, str | None, str | None]]] = {}
        for d in conn.execute(
            select(decisions.c.id, decisions.c.summary, decisions.c.rationale, decisions.c.implementation_details)
        ):
            self.decisions.setdefault(d.summary, []).append((d.id, d.rationale, d.implementation_details))
        self.progress: dict[tuple[str, int | None], list[tuple[int, str]]] = {}
        for p in conn.execute(select(progress.c.id, progress.c.description, progress.c.parent_id, progress.c.status)):
            self.progress.setdefault((p.description, p.parent_id), []).append((p.id, p.status))

    def run(self) -> None:
        kinds: tuple[ContextKind, ...] = ("product", "active")
        for kind in kinds:
            self._context(kind)
        self._each("decisions", self._decision, lambda r: str(r["summary"]))
        self._progress_tree()
        self._each("system_patterns", self._pattern, lambda r: str(r["name"]))
        self._each("custom_data", self._custom_data, lambda r: f"{r['category']}: {r['key']}")
        self._each("context_links", self._link, _link_label)

    def _each(
        self, table: str, write: Callable[[dict[str, Any]], None], label: Callable[[dict[str, Any]], str]
    ) -> None:
        for row in self.source.table(table):
            with self.summary.item(self.conn, _where(table, row), label(row)):
                write(row)
            self.summary.step()

    # -- contexts ---------------------------------------------------------------------------------

    def _context(self, kind: ContextKind) -> None:
        table = f"{kind}_context"
        rows, history = self.source.table(table), self.source.table(f"{table}_history")
        for _ in (*rows, *history):
            self.summary.step()
        current = _json_object(rows[0]["content"]) if rows else None
        versions = _context_versions(history, current)
        if not versions:
            return
        final = versions[-1][0]
        existing = self.conn.execute(select(contexts.c.content).where(contexts.c.kind == kind)).scalar()
        if existing is not None and dump_json(load_json(existing)) == dump_json(final):
            self.summary.count(table, "unchanged", {"id": 1})
            return
        if existing is not None and load_json(existing):
            self.summary.skip(
                table,
                f"the {kind} context",
                f"the workspace's {kind} context has other content; left as it is (merge by hand with "
                f"update_{table}(patch=...))",
            )
            return
        with self.summary.item(self.conn, table, f"the {kind} context"):
            for document, changed_at in versions:
                write_context(self.conn, kind, document, changed_at=changed_at)
            self.summary.count(table, "created", {"id": 1, "versions": len(versions)})

    # -- items ------------------------------------------------------------------------------------

    def _decision(self, row: dict[str, Any]) -> None:
        summary_text = str(row["summary"] or "").strip()
        rationale, details = row.get("rationale"), row.get("implementation_details")
        same_summary = self.decisions.setdefault(summary_text, [])
        match = next((d for d, r, i in same_summary if (r, i) == (rationale, details)), None)
        if match is not None:
            return self._placed("decisions", row, "decision", match, "unchanged")
        if any(d not in self.created_decisions for d, _, _ in same_summary):
            return self._kept("decisions", row, summary_text, "a decision with this summary and other text exists")
        tags = [*_tags(row.get("tags")), SOURCE_TAG]
        written = insert_decision(
            self.conn,
            summary_text,
            rationale=rationale,
            implementation_details=details,
            tags=tags,
            created_at=_time(row),
        )
        self.created_decisions.add(int(written["id"]))
        same_summary.append((int(written["id"]), rationale, details))
        self._placed("decisions", row, "decision", int(written["id"]), "created")

    def _progress_tree(self) -> None:
        """Parents before their children, every entry once; a missing or looping parent is cut (and said)."""
        rows = {str(r["id"]): r for r in self.source.table("progress_entries")}

        def cut(key: str, why: str) -> None:
            row = rows[key]
            label = f"parent of {row['description']!r}"
            self.summary.skip(_where("progress_entries", row), label, f"{why}; the entry was imported at the top level")

        parent_of: dict[str, str | None] = {}
        for key, row in rows.items():
            parent = None if row.get("parent_id") is None else str(row["parent_id"])
            if parent is not None and parent not in rows:
                cut(key, f"its parent {parent} is not in the database")
                parent = None
            parent_of[key] = parent
        order: list[str] = []
        done: set[str] = set()
        for start in rows:
            chain: list[str] = []
            on_chain: set[str] = set()
            cursor: str | None = start
            while cursor is not None and cursor not in done and cursor not in on_chain:
                chain.append(cursor)
                on_chain.add(cursor)
                cursor = parent_of[cursor]
            if cursor is not None and cursor in on_chain:  # the link that closes a loop is cut
                cut(chain[-1], "its parents loop")
                parent_of[chain[-1]] = None
            done.update(chain)
            order.extend(reversed(chain))
        for key in order:
            row, parent = rows[key], parent_of[key]
            parent_id = None if parent is None else self.placed.get(("progress_entries", parent))
            if parent is not None and parent_id is None:
                cut(key, f"its parent {parent} was not imported")
            with self.summary.item(self.conn, _where("progress_entries", row), str(row["description"])):
                self._progress(row, parent_id)
            self.summary.step()

    def _progress(self, row: dict[str, Any], parent_id: int | None) -> None:
        description, status = str(row["description"] or "").strip(), str(row["status"] or "").strip()
        same = self.progress.setdefault((description, parent_id), [])
        match = next((p for p, s in same if s == status), None)
        if match is not None:
            return self._placed("progress_entries", row, "progress", match, "unchanged")
        if same:
            return self._kept("progress_entries", row, description, f"an entry with this description is {same[0][1]}")
        written = insert_progress(self.conn, status, description, parent_id=parent_id, created_at=_time(row))
        same.append((int(written["id"]), status))
        self._placed("progress_entries", row, "progress", int(written["id"]), "created")

    def _pattern(self, row: dict[str, Any]) -> None:
        name = str(row["name"] or "").strip()
        description = str(row.get("description") or "").strip() or name  # ConPort allows none; Homeport needs one
        existing = self.conn.execute(
            select(system_patterns.c.id, system_patterns.c.description).where(
                system_patterns.c.name_key == name.casefold()
            )
        ).first()
        if existing is not None:
            if existing.description == description:
                return self._placed("system_patterns", row, "system_pattern", existing.id, "unchanged")
            return self._kept("system_patterns", row, name, "a system pattern of this name has other text")
        tags = [*_tags(row.get("tags")), SOURCE_TAG]
        written = upsert_system_pattern(self.conn, name, description, tags=tags, created_at=_time(row))
        self._placed("system_patterns", row, "system_pattern", int(written["id"]), "created")

    def _custom_data(self, row: dict[str, Any]) -> None:
        category, key = str(row["category"] or "").strip(), str(row["key"] or "").strip()
        try:
            value = json.loads(row["value"])
        except (TypeError, json.JSONDecodeError):
            value = row["value"]  # written by hand, not by ConPort: kept as the text it is
        existing = self.conn.execute(
            select(custom_data.c.id, custom_data.c.value).where(
                custom_data.c.category == category, custom_data.c.key == key
            )
        ).first()
        if existing is not None:
            if existing.value == dump_json(value):
                self._placed("custom_data", row, "custom_data", existing.id, "unchanged")
            else:
                self._kept("custom_data", row, f"{category}: {key}", "custom data under this key has another value")
                return
        else:
            written = upsert_custom_data(self.conn, category, key, value, created_at=_time(row))
            self._placed("custom_data", row, "custom_data", int(written["id"]), "created")
        # ConPort's links name custom data by id or by "category:key".
        self.placed[("custom_data", f"{category}:{key}")] = self.placed[("custom_data", str(row["id"]))]

    def _link(self, row: dict[str, Any]) -> None:
        ends = [
            self._end(str(row["source_item_type"]), str(row["source_item_id"])),
            self._end(str(row["target_item_type"]), str(row["target_item_id"])),
        ]
        found = [e for e in ends if not isinstance(e, str)]
        if len(found) < 2:
            problems = "; ".join(e for e in ends if isinstance(e, str))
            return self.summary.skip(_where("context_links", row), _link_label(row), problems)
        (source_type, source_id), (target_type, target_id) = found
        if (source_type, source_id) == (target_type, target_id):
            return self.summary.skip(_where("context_links", row), _link_label(row), "an item linked to itself")
        link = insert_link(
            self.conn,
            source_type,
            source_id,
            target_type,
            target_id,
            str(row["relationship_type"]),
            description=row.get("description"),
            created_at=_time(row) if row.get("timestamp") else None,
        )
        self.summary.count(
            "link", "created" if link["created"] else "unchanged", {"id": link["id"], "conport_id": row.get("id")}
        )

    def _end(self, conport_type: str, conport_id: str) -> tuple[str, int] | str:
        item_type = _LINK_TYPES.get(conport_type.strip())
        if item_type is None:
            return f"item type {conport_type!r} is not one ConPort links"
        if item_type in ("product_context", "active_context"):
            kind = item_type.removesuffix("_context")
            if self.conn.execute(select(contexts.c.kind).where(contexts.c.kind == kind)).first() is None:
                return f"the {kind} context is empty"
            return item_type, 1
        table = {"decision": "decisions", "progress": "progress_entries"}.get(item_type, f"{item_type}s")
        if item_type == "custom_data":
            table = "custom_data"
        placed = self.placed.get((table, conport_id.strip()))
        if placed is not None:
            return item_type, placed
        if any(str(r["id"]) == conport_id.strip() for r in self.source.table(table)):
            return f"{conport_type} {conport_id} was skipped"
        return f"{conport_type} {conport_id} is not in the database (deleted in ConPort)"

    # -- bookkeeping ------------------------------------------------------------------------------

    def _placed(self, table: str, row: dict[str, Any], item_type: str, item_id: int, action: str) -> None:
        self.placed[(table, str(row["id"]))] = item_id
        self.summary.count(item_type, action, {"id": item_id, "conport_id": row["id"]})

    def _kept(self, table: str, row: dict[str, Any], label: str, why: str) -> None:
        self.summary.skip(_where(table, row), label, f"{why}; left as it is")


def _where(table: str, row: dict[str, Any]) -> str:
    return f"{table} {row['id']}" if "id" in row else table


def _link_label(row: dict[str, Any]) -> str:
    return (
        f"{row['source_item_type']} {row['source_item_id']} {row['relationship_type']} "
        f"{row['target_item_type']} {row['target_item_id']}"
    )


def _tags(raw: Any) -> list[str]:
    try:
        tags = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return [t.strip() for t in raw.split(",") if t.strip()]
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def _time(row: dict[str, Any]) -> str:
    """ConPort's timestamp in Homeport's form; older tables have none (the time of the import, then)."""
    value = row.get("timestamp")
    if isinstance(value, str):
        try:
            return utc_stamp(value)
        except InvalidItemError:
            pass
    return now()


def _json_object(text: Any) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _context_versions(
    history: list[dict[str, Any]], current: dict[str, Any] | None
) -> list[tuple[dict[str, Any], str | None]]:
    """The documents the context has held, oldest first, each with the time it was written.

    ConPort's history row N holds the content *before* update N, stamped with the time of that
    update: so a version was written at the time of the history row before it (unknown for the
    first, which is the empty document ConPort starts with), and the current one at the last's.
    """
    versions: list[Version] = []
    previous_time: str | None = None
    for row in history:
        document = _json_object(row["content"])
        if document:
            versions.append((document, previous_time or _time(row)))
        previous_time = _time(row)
    if current:
        versions.append((current, previous_time))
    deduplicated: list[Version] = []
    for document, stamp in versions:
        if not deduplicated or dump_json(deduplicated[-1][0]) != dump_json(document):
            deduplicated.append((document, stamp))
    return deduplicated
