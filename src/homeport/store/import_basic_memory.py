"""Import a basic-memory project directory (Markdown notes with front matter, observations, relations).

Its notes and their parts become Homeport items:

    a note of type decision, or in a decisions/ folder -> a decision: summary = the title, rationale =
                                                          the text and its other observations; its tags
                                                          + `basic-memory`
    an observation [decision]                           -> a decision: summary = its text, rationale =
                                                          its (context); its #tags + `basic-memory`
    an observation [pattern] or [convention]            -> a system pattern: name = its text, description
                                                          = text, (context) and `source: permalink`
    any other note                                      -> custom data: category = its top folder (its
                                                          type at the top level), key = its permalink,
                                                          value = {title, text, tags, observations}
    a relation `- type [[Target]]`                      -> a link between the two notes' items
    (an observation that became its own item)           -> a link `noted_in` to its note's item

Importing is idempotent, matched on content: an item already there as the note has it is
`unchanged`; a decision with the same summary, a pattern of the same name or custom data under the
same key with other text is left as it is and listed in `skipped`, as is every note that cannot be
read and every relation to a note the project does not have. One transaction; `dry_run` rolls it back.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from homeport.store._basic_memory_read import Note, Observation, Project, read_project
from homeport.store._common import load_json
from homeport.store._importing import Progress, Summary, import_transaction
from homeport.store.custom_data import upsert_custom_data
from homeport.store.database import Store
from homeport.store.decisions import insert_decision
from homeport.store.links import insert_link
from homeport.store.patterns import upsert_system_pattern
from homeport.store.schema import custom_data, decisions, system_patterns

__all__ = ["Project", "import_basic_memory", "read_project"]

KIND = "basic-memory"
SOURCE_TAG = "basic-memory"
DECISION_CATEGORIES = frozenset({"decision"})
PATTERN_CATEGORIES = frozenset({"pattern", "convention"})
NOTED_IN = "noted_in"
Placed = tuple[str, int]  # (item type, id)


def import_basic_memory(
    store: Store, project: Project, *, dry_run: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Write the project's notes into the store in one transaction (rolled back when `dry_run`)."""
    total = sum(1 + len(n.relations) + sum(item_type_of(o) is not None for o in n.observations) for n in project.notes)
    summary = Summary(KIND, project.path, dry_run=dry_run, progress=progress, total=total)
    summary.data["skipped"].extend(project.skipped)

    def body(conn: Connection) -> None:
        _Importer(conn, summary).run(project)

    return import_transaction(store, summary, body)


def is_decision_note(note: Note) -> bool:
    return note.note_type.casefold() == "decision" or note.folder.casefold() == "decisions"


def item_type_of(observation: Observation) -> str | None:
    category = observation.category.casefold()
    if category in DECISION_CATEGORIES:
        return "decision"
    return "system_pattern" if category in PATTERN_CATEGORIES else None


class _Importer:
    def __init__(self, conn: Connection, summary: Summary) -> None:
        self.conn, self.summary = conn, summary
        self.by_name: dict[str, Placed] = {}  # what [[...]] may say -> the note's item
        self.not_placed: set[str] = set()  # notes read but skipped

    def run(self, project: Project) -> None:
        notes: list[tuple[Note, Placed | None]] = []
        for note in project.notes:
            placed = self._note(note)
            notes.append((note, placed))
            if placed is not None:
                for name in note.names():
                    self.by_name.setdefault(name, placed)
            else:
                self.not_placed.update(note.names())
            for observation in note.observations:
                if item_type_of(observation) is not None:
                    self._observation(note, observation, placed)
        for note, placed in notes:  # once every note is placed, so a relation may point forward
            for relation in note.relations:
                if placed is not None:  # a skipped note's relations go with it
                    label = f"{note.title} {relation.relation_type} {relation.target}"
                    with self.summary.item(self.conn, f"{note.path}:{relation.line}", label):
                        self._relation(note, placed, relation.relation_type, relation.target, relation.line)
                self.summary.step()

    # -- notes ------------------------------------------------------------------------------------

    def _note(self, note: Note) -> Placed | None:
        placed: Placed | None = None
        with self.summary.item(self.conn, note.path, note.title):
            placed = self._decision_note(note) if is_decision_note(note) else self._custom_data(note)
        self.summary.step()
        return placed

    def _decision_note(self, note: Note) -> Placed | None:
        others = [o.as_line() for o in note.observations if item_type_of(o) is None]
        rationale = "\n\n".join(p for p in (note.text, "\n".join(others)) if p) or None
        return self._decision(note.path, note.title, rationale, [*note.tags, SOURCE_TAG], note.permalink)

    def _custom_data(self, note: Note) -> Placed | None:
        category = note.folder or note.note_type
        value = {
            "title": note.title,
            "text": note.text,
            "tags": note.tags,
            "observations": [o.as_value() for o in note.observations],
        }
        existing = self.conn.execute(
            select(custom_data.c.id, custom_data.c.value).where(
                custom_data.c.category == category, custom_data.c.key == note.permalink
            )
        ).first()
        if existing is not None:
            if load_json(existing.value) != value:
                self._kept(note.path, f"{category}: {note.permalink}", "custom data under this key has another value")
                return None
            return self._placed("custom_data", existing.id, "unchanged", note.permalink)
        written = upsert_custom_data(self.conn, category, note.permalink, value)
        return self._placed("custom_data", int(written["id"]), "created", note.permalink)

    # -- observations -----------------------------------------------------------------------------

    def _observation(self, note: Note, observation: Observation, note_item: Placed | None) -> None:
        where = f"{note.path}:{observation.line}"
        with self.summary.item(self.conn, where, observation.text):
            tags = [*observation.tags, SOURCE_TAG]
            if item_type_of(observation) == "decision":
                placed = self._decision(where, observation.text, observation.context, tags, note.permalink)
            else:
                placed = self._pattern(where, observation, tags, note.permalink)
            if placed is not None and note_item is not None and placed != note_item:
                self._link(placed, note_item, NOTED_IN)
        self.summary.step()

    def _pattern(self, where: str, observation: Observation, tags: list[str], permalink: str) -> Placed | None:
        context = f" ({observation.context})" if observation.context else ""
        description = f"{observation.text}{context}\n\nsource: {permalink}"
        existing = self.conn.execute(
            select(system_patterns.c.id, system_patterns.c.description).where(
                system_patterns.c.name_key == observation.text.casefold()
            )
        ).first()
        if existing is not None:
            if existing.description != description:
                self._kept(where, observation.text, "a system pattern of this name has other text")
                return None
            return self._placed("system_pattern", existing.id, "unchanged", permalink)
        written = upsert_system_pattern(self.conn, observation.text, description, tags=tags)
        return self._placed("system_pattern", int(written["id"]), "created", permalink)

    # -- shared -----------------------------------------------------------------------------------

    def _decision(
        self, where: str, summary_text: str, rationale: str | None, tags: list[str], permalink: str
    ) -> Placed | None:
        same = self.conn.execute(
            select(decisions.c.id, decisions.c.rationale).where(decisions.c.summary == summary_text)
        ).all()
        match = next((d.id for d in same if d.rationale == rationale), None)
        if match is not None:
            return self._placed("decision", match, "unchanged", permalink)
        if same:
            self._kept(where, summary_text, "a decision with this summary and other text exists")
            return None
        written = insert_decision(self.conn, summary_text, rationale=rationale, tags=tags)
        return self._placed("decision", int(written["id"]), "created", permalink)

    def _relation(self, note: Note, source: Placed, relation_type: str, target: str, line: int) -> None:
        found = self.by_name.get(target.casefold())
        where = f"{note.path}:{line}"
        label = f"{note.title} {relation_type} {target}"
        if found is None and target.casefold() in self.not_placed:
            return self.summary.skip(where, label, f"the note {target!r} was skipped (see its own entry)")
        if found is None:
            return self.summary.skip(where, label, f"the project has no note {target!r} (a forward reference)")
        if found == source:
            return self.summary.skip(where, label, "a note linked to itself")
        self._link(source, found, relation_type)

    def _link(self, source: Placed, target: Placed, relationship: str) -> None:
        link = insert_link(self.conn, source[0], source[1], target[0], target[1], relationship)
        action = "created" if link["created"] else "unchanged"
        self.summary.count("link", action, {"id": link["id"], "relationship": relationship})

    def _placed(self, item_type: str, item_id: int, action: str, permalink: str) -> Placed:
        self.summary.count(item_type, action, {"id": item_id, "permalink": permalink})
        return item_type, item_id

    def _kept(self, where: str, label: str, why: str) -> None:
        self.summary.skip(where, label, f"{why}; left as it is")
