"""Import the knowledge graph of the reference MCP memory server (`memory.jsonl`).

That server keeps one JSON object per line: entities `{"type": "entity", "name", "entityType",
"observations": [...]}` and relations `{"type": "relation", "from", "to", "relationType"}`.
They become Homeport items by the entity's type (case-insensitive):

    decision                                         -> a decision: summary = name, rationale = the
                                                        observations, one per line; tag memory-jsonl
    pattern, convention, practice, guideline, rule   -> a system pattern: name = name, description =
                                                        the observations (or the name); tag memory-jsonl
    anything else (person, project, technology, ...) -> custom data: category = the entity type,
                                                        key = the name, value = the list of observations
    a relation                                       -> a link between the two items, relationship =
                                                        relationType

Importing is idempotent: an item that is already there as the file has it is `unchanged`; custom
data gains the observations it lacks (`updated`); a decision or pattern of the same name with other
text is left as it is and reported in `skipped`, like every line that cannot be imported (not JSON,
an unknown type, a relation to an entity the file does not have), each with its line number and
why. Everything is written in one transaction; `dry_run` runs the same transaction and rolls it back.

Two things refuse the whole file, before anything is written: a file over `MAX_FILE_BYTES` (the cap of
the other importers; checked on the open file before its text is read, and the read stops there: a
32 MiB file used to take 348 s and 945 MB while holding a worker), and a line of lists and objects
nested more than `MAX_DEPTH` levels deep (the reference server writes 2; Python's parser would
recurse on each level until it fails).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, select

from homeport.errors import InvalidItemError
from homeport.store._common import load_json
from homeport.store._importing import Progress
from homeport.store.custom_data import upsert_custom_data
from homeport.store.database import Store
from homeport.store.decisions import insert_decision
from homeport.store.links import insert_link
from homeport.store.patterns import upsert_system_pattern
from homeport.store.schema import custom_data, decisions, system_patterns

__all__ = ["MAX_DEPTH", "MAX_FILE_BYTES", "KnowledgeGraph", "import_graph", "read_graph"]

SOURCE_TAG = "memory-jsonl"
PATTERN_TYPES = frozenset({"pattern", "convention", "practice", "guideline", "rule"})
MAX_FILE_BYTES = 1_000_000  # as the markdown and basic-memory importers' files
MAX_DEPTH = 32  # lists and objects inside each other on one line; an entity line has 2
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")


@dataclass
class Entity:
    name: str
    entity_type: str
    observations: list[str]
    line: int


@dataclass
class Relation:
    source: str
    target: str
    relationship: str
    line: int


@dataclass
class KnowledgeGraph:
    """A memory.jsonl file as read: its entities by name, its relations, and the lines that were skipped."""

    path: Path
    entities: dict[str, Entity] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def texts(self) -> dict[str, Any]:
        """What would be written, by entity and relation, for the secret check."""
        return {
            "entities": {
                e.name: {"entityType": e.entity_type, "observations": e.observations} for e in self.entities.values()
            },
            "relations": [f"{r.source} {r.relationship} {r.target}" for r in self.relations],
        }


def read_graph(path: Path) -> KnowledgeGraph:
    """Parse the file; lines that are not an entity or a relation are kept in `skipped` with the reason.

    Raises:
        InvalidItemError: the file cannot be read as UTF-8 text, is over MAX_FILE_BYTES, or has a line
            nested more than MAX_DEPTH levels deep.
    """
    try:
        text = _read_capped(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidItemError(f"cannot read {path}: {exc}; pass the memory server's memory.jsonl") from None
    graph = KnowledgeGraph(path)
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            _read_line(graph, number, line)
    return graph


def _read_capped(path: Path) -> bytes:
    """The file's bytes, refused by its size before they are read; never more than the cap is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not block the server
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidItemError(f"{path} is not a regular file; pass the memory server's memory.jsonl")
        if info.st_size > MAX_FILE_BYTES:
            raise _too_large(path, f"{info.st_size:,} bytes")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # it grew since fstat
        raise _too_large(path, "more bytes than that")
    return data


def _too_large(path: Path, size: str) -> InvalidItemError:
    return InvalidItemError(
        f"{path} is {size}, over the limit of {MAX_FILE_BYTES:,} bytes for a memory.jsonl import; "
        "split it into files under the limit (whole lines: each entity or relation is one line) and import "
        "them one after another"
    )


def _too_deep(graph: KnowledgeGraph, number: int) -> InvalidItemError:
    return InvalidItemError(
        f"{graph.path} line {number} is nested too deeply: lists and objects inside each other more than "
        f"{MAX_DEPTH} levels, over the limit of {MAX_DEPTH} (an entity or relation has 2); nothing was "
        "imported: fix or remove that line"
    )


def _depth(line: str) -> int:
    """How many lists and objects of the line lie inside each other (strings' brackets do not count)."""
    if line.count("[") + line.count("{") <= MAX_DEPTH:  # every line the memory server writes
        return 0
    brackets = _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", line))
    return max(itertools.accumulate(1 if b in "[{" else -1 for b in brackets), default=0)


def _read_line(graph: KnowledgeGraph, number: int, line: str) -> None:
    def skip(what: str, why: str) -> None:
        graph.skipped.append({"line": number, "item": what, "reason": why})

    if _depth(line) > MAX_DEPTH:
        raise _too_deep(graph, number)
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return skip(line[:80], f"not JSON ({exc.msg})")
    except RecursionError:  # _depth should have seen it; never an internal error
        raise _too_deep(graph, number) from None
    if not isinstance(record, dict):
        return skip(line[:80], "not a JSON object")
    kind = record.get("type")
    if kind == "entity":
        name, entity_type, observations = record.get("name"), record.get("entityType"), record.get("observations", [])
        if not isinstance(name, str) or not name.strip():
            return skip(line[:80], "an entity without a name")
        if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
            return skip(name, "observations is not a list of strings")
        name = name.strip()
        clean_type = entity_type.strip() if isinstance(entity_type, str) and entity_type.strip() else "Entity"
        known = graph.entities.get(name)
        if known is not None:  # the reference server never writes two; a hand-edited file may
            known.observations += [o for o in observations if o not in known.observations]
            return skip(name, f"a second entity of this name (line {known.line}); its observations were merged")
        graph.entities[name] = Entity(name, clean_type, list(dict.fromkeys(observations)), number)
    elif kind == "relation":
        source, target, relationship = record.get("from"), record.get("to"), record.get("relationType")
        if not all(isinstance(v, str) and v.strip() for v in (source, target, relationship)):
            return skip(line[:80], "a relation needs from, to and relationType")
        assert isinstance(source, str) and isinstance(target, str) and isinstance(relationship, str)
        graph.relations.append(Relation(source.strip(), target.strip(), relationship.strip(), number))
    else:
        skip(line[:80], f"type {kind!r} is neither entity nor relation")


class _DryRun(Exception):
    pass


def import_graph(
    store: Store, graph: KnowledgeGraph, *, dry_run: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Write the graph into the store in one transaction (rolled back when `dry_run`); returns the summary.

    `progress(done, total)` is called after each entity and each relation.
    """
    total = len(graph.entities) + len(graph.relations)
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    summary: dict[str, Any] = {
        "source": str(graph.path),
        "kind": "memory-jsonl",
        "dry_run": dry_run,
        "created": {"decision": 0, "system_pattern": 0, "custom_data": 0, "link": 0},
        "updated": 0,
        "unchanged": 0,
        "skipped": list(graph.skipped),
        "items": [],
    }
    try:
        with store.write() as conn:
            placed: dict[str, tuple[str, int]] = {}
            for name, item in _import_entities(conn, graph, summary):
                placed[name] = item
                step()
            for relation in graph.relations:
                _import_relation(conn, relation, placed, summary)
                step()
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    summary["skipped"].sort(key=lambda s: s["line"])
    return summary


def _import_entities(
    conn: Connection, graph: KnowledgeGraph, summary: dict[str, Any]
) -> Iterator[tuple[str, tuple[str, int]]]:
    for entity in graph.entities.values():
        kind = entity.entity_type.casefold()
        if kind == "decision":
            item_type, (item_id, action) = "decision", _decision(conn, entity)
        elif kind in PATTERN_TYPES:
            item_type, (item_id, action) = "system_pattern", _pattern(conn, entity)
        else:
            item_type, (item_id, action) = "custom_data", _custom_data(conn, entity)
        if action == "created":
            summary["created"][item_type] += 1
        elif action == "kept":
            summary["skipped"].append(
                {
                    "line": entity.line,
                    "item": entity.name,
                    "reason": f"a {item_type} of this name already exists with other text; left as it is",
                }
            )
        else:
            summary[action] += 1
        summary["items"].append({"entity": entity.name, "type": item_type, "id": item_id, "action": action})
        yield entity.name, (item_type, item_id)


def _decision(conn: Connection, entity: Entity) -> tuple[int, str]:
    rationale = "\n".join(entity.observations) or None
    existing = conn.execute(
        select(decisions.c.id, decisions.c.rationale).where(decisions.c.summary == entity.name).order_by(decisions.c.id)
    ).first()
    if existing is not None:
        return existing.id, "unchanged" if existing.rationale == rationale else "kept"
    written = insert_decision(conn, entity.name, rationale=rationale, tags=[SOURCE_TAG])
    return int(written["id"]), "created"


def _pattern(conn: Connection, entity: Entity) -> tuple[int, str]:
    description = "\n".join(entity.observations).strip() or entity.name  # as the pattern stores it
    existing = conn.execute(
        select(system_patterns.c.id, system_patterns.c.description).where(
            system_patterns.c.name_key == entity.name.casefold()
        )
    ).first()
    if existing is not None:
        return existing.id, "unchanged" if existing.description == description else "kept"
    written = upsert_system_pattern(conn, entity.name, description, tags=[SOURCE_TAG])
    return int(written["id"]), "created"


def _custom_data(conn: Connection, entity: Entity) -> tuple[int, str]:
    existing = conn.execute(
        select(custom_data.c.id, custom_data.c.value).where(
            custom_data.c.category == entity.entity_type, custom_data.c.key == entity.name
        )
    ).first()
    if existing is None:
        written = upsert_custom_data(conn, entity.entity_type, entity.name, entity.observations)
        return int(written["id"]), "created"
    value = load_json(existing.value)
    if not isinstance(value, list):
        return existing.id, "kept"
    missing = [o for o in entity.observations if o not in value]
    if not missing:
        return existing.id, "unchanged"
    upsert_custom_data(conn, entity.entity_type, entity.name, [*value, *missing])
    return existing.id, "updated"


def _import_relation(
    conn: Connection, relation: Relation, placed: dict[str, tuple[str, int]], summary: dict[str, Any]
) -> None:
    label = f"{relation.source} {relation.relationship} {relation.target}"
    unknown = [name for name in (relation.source, relation.target) if name not in placed]
    if unknown:
        reason = f"the file has no entity {', '.join(repr(n) for n in unknown)}"
        summary["skipped"].append({"line": relation.line, "item": label, "reason": reason})
        return
    (source_type, source_id), (target_type, target_id) = placed[relation.source], placed[relation.target]
    if (source_type, source_id) == (target_type, target_id):
        summary["skipped"].append({"line": relation.line, "item": label, "reason": "an entity linked to itself"})
        return
    link = insert_link(conn, source_type, source_id, target_type, target_id, relation.relationship)
    if link["created"]:
        summary["created"]["link"] += 1
    else:
        summary["unchanged"] += 1
