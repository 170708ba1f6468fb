"""Memory tools: product and active context, decisions, progress, system patterns, custom data."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from homeport.core import citing
from homeport.core.catalog import CATALOG, DELETE, READ, WRITE, WRITE_IDEMPOTENT, Scan
from homeport.core.citing import CitesArg
from homeport.core.pipeline import Call
from homeport.errors import InvalidArgumentError
from homeport.store import browse, contexts, custom_data, decisions, lifecycle, patterns, progress, tidy_proposals
from homeport.store import citations as cited
from homeport.store.fields import Category, ItemId, JsonDocument, JsonValue, Key, LongText, Relationship, Title
from homeport.store.fields import Name as NameArg
from homeport.store.fields import Status as StatusArg
from homeport.store.fields import Tag as TagArg

__all__ = ["IdArg", "Json", "LimitArg", "TagsArg"]

Json = dict[str, Any]
# Ids are SQLite integers: anything past 64 bits is refused by the schema, not by a crash.
# The argument types and size caps are homeport.store.fields', which imports validate with too.
IdArg = ItemId
ContentArg = Annotated[
    JsonDocument | None, Field(description="The whole new document (replaces it). Give this or patch.")
]
PatchArg = Annotated[
    JsonDocument | None,
    Field(description='Keys to merge into the document; a key set to "__DELETE__" is removed. Give this or content.'),
]
AllowEmptyArg = Annotated[bool, Field(description="content {} may erase a non-empty document (default: refused).")]
TagsArg = Annotated[list[TagArg] | None, Field(description="Tags; matched case-insensitively.")]
LimitArg = Annotated[int, Field(ge=1, le=1000)]
LinkedTypeArg = Literal["decision", "progress", "system_pattern", "custom_data", "product_context", "active_context"]

PRODUCT = "product context: goals, features, architecture"
ACTIVE = "active context: current focus, recent changes, open questions"


def _declare_context(kind: contexts.ContextKind, noun: str) -> None:
    def get_context(call: Call) -> Json:
        return contexts.get_context(call.store, kind)

    def update_context(
        call: Call, content: ContentArg = None, patch: PatchArg = None, allow_empty: AllowEmptyArg = False
    ) -> Json:
        return contexts.update_context(
            call.require_store(), kind, content=content, patch=patch, allow_empty=allow_empty
        )

    CATALOG.tool("memory", READ, f"Read the {noun} (a JSON document) with its version.", name=f"get_{kind}_context")(
        get_context
    )
    CATALOG.tool(
        "memory",
        WRITE_IDEMPOTENT,
        f"Replace (content) or patch (patch) the {noun}; every change keeps a version.",
        name=f"update_{kind}_context",
        scan=Scan.ARGUMENTS,
    )(update_context)


_declare_context("product", PRODUCT)
_declare_context("active", ACTIVE)


@CATALOG.tool(
    "memory",
    WRITE,
    "Record a decision (what, why, how). Returns its id for links and search.",
    scan=Scan.ARGUMENTS,
)
def log_decision(
    call: Call,
    summary: Title,
    rationale: LongText | None = None,
    implementation_details: LongText | None = None,
    tags: TagsArg = None,
    cites: CitesArg = None,
) -> Json:
    written = decisions.log_decision(
        call.require_store(),
        summary,
        rationale=rationale,
        implementation_details=implementation_details,
        tags=tags,
        citations=citing.anchors_for(call, cites),
    )
    return _with_duplicate_notice(call, written)


def _with_duplicate_notice(call: Call, written: Json) -> Json:
    """A decision that says what a current one says already: the result names it (nothing is merged)."""
    same = tidy_proposals.near_duplicate(call.require_store(), "decision", written)
    if same is not None:
        written["duplicate_of"] = same
        written["notice"] = (
            f"decision {same['id']} already says this ({same['title']!r}); correct it with update_decision, "
            f"or merge the two with propose_cleanup (kinds=[duplicate]) and apply_changeset"
        )
    return written


@CATALOG.tool("memory", READ, "List decisions, newest first, optionally by tags.", key="decisions")
def get_decisions(call: Call, limit: LimitArg = 20, tags_any: TagsArg = None, tags_all: TagsArg = None) -> Any:
    with citing.one_read(call):  # the items and their citations from one snapshot
        hidden = lifecycle.hidden_of(call.store, "decision")
        wider = min(limit + len(hidden), 1000)
        found = decisions.get_decisions(call.store, limit=wider, tags_any=tags_any, tags_all=tags_all)
        return citing.annotate(call, "decision", _shown("decisions", found, "decision", hidden, limit))


def _shown(key: str, rows: list[dict[str, Any]], item_type: str, hidden: set[tuple[str, int]], limit: int) -> Any:
    """The first `limit` rows that are current; `hidden_expired` counts the archived, superseded or expired
    items left out (they stay readable in get_item_history and the changesets)."""
    if not hidden:
        return rows[:limit]
    kept, passed = lifecycle.visible(rows, hidden, limit, item_type=item_type)
    return {key: kept, "hidden_expired": passed} if passed else kept


@CATALOG.tool(
    "memory",
    WRITE,
    "Record a progress entry (task). status is free text; common: TODO, IN_PROGRESS, DONE, BLOCKED. "
    "parent_id nests it under another entry. linked_item_type and linked_item_id link the new entry to an "
    "existing item in the same write (link_relationship, default relates_to_progress); if that item does not "
    "exist, nothing is written.",
    scan=Scan.ARGUMENTS,
)
def log_progress(
    call: Call,
    status: StatusArg,
    description: LongText,
    parent_id: IdArg | None = None,
    cites: CitesArg = None,
    linked_item_type: LinkedTypeArg | None = None,
    linked_item_id: IdArg | None = None,
    link_relationship: Relationship = "relates_to_progress",
) -> Json:
    if (linked_item_type is None) != (linked_item_id is None):
        raise InvalidArgumentError(
            "log_progress: give linked_item_type and linked_item_id together (the item to link the new entry "
            "to), or neither; nothing was written"
        )
    link = (linked_item_type, linked_item_id, link_relationship) if linked_item_type and linked_item_id else None
    anchors = citing.anchors_for(call, cites)
    if anchors is None:
        return progress.log_progress(call.require_store(), status, description, parent_id=parent_id, link=link)
    written = cited.write_with_citations(
        call.require_store(),
        "progress",
        anchors,
        lambda conn: progress.insert_progress_linked(conn, status, description, parent_id=parent_id, link=link),
    )
    return citing.annotate_one(call, "progress", written)


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Change the status, description or parent of a progress entry; parent_id=0 moves it to the top level.",
    scan=Scan.ARGUMENTS,
)
def update_progress(
    call: Call,
    progress_id: IdArg,
    status: StatusArg | None = None,
    description: LongText | None = None,
    parent_id: Annotated[int, Field(ge=0, le=2**63 - 1)] | None = None,
    cites: CitesArg = None,
) -> Json:
    anchors = citing.anchors_for(call, cites)
    if anchors is None or (status, description, parent_id) != (None, None, None):
        written = progress.update_progress(
            call.require_store(), progress_id, status=status, description=description, parent_id=parent_id
        )
    if anchors is None:
        return written
    cited.set_citations(call.require_store(), "progress", progress_id, anchors)
    return citing.annotate_one(call, "progress", browse.get_item(call.store, "progress", progress_id))


@CATALOG.tool(
    "memory",
    READ,
    "List progress entries, newest first, optionally by status or parent. tree=true returns them nested "
    "under `children` instead: the subtree of parent_id, or every top-level entry.",
    key="progress",
)
def get_progress(
    call: Call, status: str | None = None, parent_id: IdArg | None = None, limit: LimitArg = 50, tree: bool = False
) -> Any:
    if tree:
        forest = progress.get_progress_tree(call.store, root_id=parent_id, status=status)
        hidden = lifecycle.hidden_of(call.store, "progress")
        if not hidden:
            return forest
        forest, passed = lifecycle.visible_tree(forest, hidden)
        return {"progress": forest, "hidden_expired": passed} if passed else forest
    with citing.one_read(call):  # the items and their citations from one snapshot
        hidden = lifecycle.hidden_of(call.store, "progress")
        wider = min(limit + len(hidden), 1000)
        found = progress.get_progress(call.store, status=status, parent_id=parent_id, limit=wider)
        return citing.annotate(call, "progress", _shown("progress", found, "progress", hidden, limit))


@CATALOG.tool(
    "memory",
    DELETE,
    "Delete a progress entry with its links. An entry with children is refused unless cascade=true, "
    "which deletes the whole subtree. Returns what was removed.",
)
def delete_progress(call: Call, progress_id: IdArg, cascade: bool = False) -> Json:
    return progress.delete_progress(call.require_store(), progress_id, cascade=cascade)


@CATALOG.tool("memory", DELETE, "Delete a decision with its tags and links. Returns what was removed.")
def delete_decision(call: Call, decision_id: IdArg) -> Json:
    return decisions.delete_decision(call.require_store(), decision_id)


@CATALOG.tool("memory", DELETE, "Delete the custom data under (category, key). Returns what was removed.")
def delete_custom_data(call: Call, category: str, key: str) -> Json:
    return custom_data.delete_custom_data(call.require_store(), category, key)


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Record a system pattern (a reusable way the project does something). Logging an existing name "
    "(any case) updates that pattern.",
    scan=Scan.ARGUMENTS,
)
def log_system_pattern(
    call: Call, name: NameArg, description: LongText, tags: TagsArg = None, cites: CitesArg = None
) -> Json:
    anchors = citing.anchors_for(call, cites)
    if anchors is None:
        return patterns.log_system_pattern(call.require_store(), name, description, tags=tags)
    written = cited.write_with_citations(
        call.require_store(),
        "system_pattern",
        anchors,
        lambda conn: patterns.upsert_system_pattern(conn, name, description, tags=tags),
    )
    return citing.annotate_one(call, "system_pattern", written)


@CATALOG.tool("memory", READ, "List system patterns by name, optionally by tags.", key="system_patterns")
def get_system_patterns(call: Call, tags_any: TagsArg = None, tags_all: TagsArg = None, limit: LimitArg = 50) -> Any:
    with citing.one_read(call):  # the items and their citations from one snapshot
        hidden = lifecycle.hidden_of(call.store, "system_pattern")
        wider = min(limit + len(hidden), 1000)
        found = patterns.get_system_patterns(call.store, tags_any=tags_any, tags_all=tags_all, limit=wider)
        shown = _shown("system_patterns", found, "system_pattern", hidden, limit)
        return citing.annotate(call, "system_pattern", shown)


@CATALOG.tool("memory", DELETE, "Delete a system pattern with its tags and links. Returns what was removed.")
def delete_system_pattern(call: Call, pattern_id: IdArg) -> Json:
    return patterns.delete_system_pattern(call.require_store(), pattern_id)


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Store any JSON value under (category, key), replacing an existing one. The category "
    "ProjectGlossary is the project glossary.",
    scan=Scan.ARGUMENTS,
)
def log_custom_data(call: Call, category: Category, key: Key, value: JsonValue, cites: CitesArg = None) -> Json:
    anchors = citing.anchors_for(call, cites)
    if anchors is None:
        return custom_data.log_custom_data(call.require_store(), category, key, value)
    written = cited.write_with_citations(
        call.require_store(),
        "custom_data",
        anchors,
        lambda conn: custom_data.upsert_custom_data(conn, category, key, value),
    )
    return citing.annotate_one(call, "custom_data", written)


@CATALOG.tool("memory", READ, "Read custom data, optionally one category or one (category, key).", key="items")
def get_custom_data(call: Call, category: str | None = None, key: str | None = None) -> Any:
    with citing.one_read(call):  # the items and their citations from one snapshot
        found = custom_data.get_custom_data(call.store, category=category, key=key)
        if key is not None:  # one entry asked for by its key is read as it is, hidden or not
            return citing.annotate(call, "custom_data", found)
        shown = _shown("items", found, "custom_data", lifecycle.hidden_of(call.store, "custom_data"), len(found))
        return citing.annotate(call, "custom_data", shown)
