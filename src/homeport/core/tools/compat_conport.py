"""ConPort's tool names, as aliases of Homeport's tools (`--tools conport`).

Written from ConPort's published tool schemas (context-portal-mcp 0.3.13; its tools/list is
checked in as tests/fixtures/conport_tools.json, made by bench/conport_tools.py): the same names,
the same arguments, the same required ones, and the result shapes ConPort documents (a list as
`{"result": [...]}`; a write's item with its `timestamp`; `{"status", "message"}` for updates and
deletes), each with Homeport's `workspace` added. Every alias runs a Homeport tool through the
whole call path: `workspace_id` is resolved and checked exactly as `workspace`; the effect, the
secret check and the access rules are the tool's own.

Where ConPort takes something Homeport's tool cannot do in the same call, the alias refuses it
with what to call instead (log_progress's linked_item_*), rather than drop it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from homeport.core.catalog import CATALOG
from homeport.core.tools import knowledge, memory, workspace  # noqa: F401  (the tools these aliases name, declared first)
from homeport.errors import InvalidArgumentError

__all__ = ["CONPORT_TYPES"]

Json = dict[str, Any]
WS = "workspace_id"
GROUP = "conport"
# ConPort's item type names -> Homeport's (only progress differs).
CONPORT_TYPES = {"progress_entry": "progress"}
_BACK = {"progress": "progress_entry"}

QueryTerm = Annotated[str, Field(min_length=1, description="The term to search for (FTS5 syntax works).")]
Limit = Annotated[int | None, Field(ge=1, le=1000, description="Maximum number of results.")]
Tags = Annotated[list[str] | None, Field(description="Filter by tags.")]
ItemId = Annotated[int | str, Field(description="The item's id (an integer, or its digits as text).")]


def _type(name: str) -> str:
    return CONPORT_TYPES.get(name, name)


def _id(value: int | str, argument: str) -> int:
    if isinstance(value, int):
        return value
    if value.strip().isdigit():
        return int(value.strip())
    raise InvalidArgumentError(f"{argument} must be an item's integer id, not {value!r}; nothing was done")


# -- result shapes


def _item(item: Json) -> Json:
    """A Homeport item as ConPort shows one: its `timestamp` (when it was written) beside Homeport's fields."""
    out = dict(item)
    if "created_at" in out and "timestamp" not in out:
        out["timestamp"] = out["created_at"]
    if out.get("type") in _BACK:
        out["type"] = _BACK[out["type"]]
    return out


def _listed(key: str) -> Any:
    def shape(result: Json, _args: Json) -> Json:
        items = result.get(key) or []
        limit = _args.get("limit")
        if key == "items" and isinstance(limit, int):  # get_linked_items: ConPort's limit, Homeport has none
            items = items[:limit]
        return {"result": [_item(i) for i in items], "workspace": result.get("workspace"), **_hidden(result)}

    return shape


def _one(result: Json, _args: Json) -> Json:
    return _item(result)


def _status(message: str) -> Any:
    def shape(result: Json, args: Json) -> Json:
        return {"status": "success", "message": message.format(**args), **result}

    return shape


def _hits(result: Json, _args: Json) -> Json:
    """Search hits as ConPort's search tools list them: id, type, the title under ConPort's field name."""
    out = []
    for hit in result.get("results") or []:
        item = _item(hit)
        title = str(hit.get("title") or "")
        if hit.get("type") == "custom_data" and ": " in title:  # the index titles custom data "category: key"
            item.setdefault("category", title.split(": ", 1)[0])
            item.setdefault("key", title.split(": ", 1)[1])
        field = {"decision": "summary", "system_pattern": "name"}.get(str(hit.get("type")))
        if field is not None:
            item.setdefault(field, title)
        item.setdefault("timestamp", hit.get("updated_at"))
        out.append(item)
    return {
        "result": out,
        "mode_used": result.get("mode_used"),
        "workspace": result.get("workspace"),
        **_hidden(result),
    }


def _hidden(result: Json) -> Json:
    """What Homeport left out as another branch's decisions and patterns (`store.branches`), carried over."""
    return {k: result[k] for k in ("hidden_on_other_branches", "hidden_why") if k in result}


def _context(result: Json, _args: Json) -> Json:
    """ConPort returns the document itself; Homeport's `workspace` is added beside its keys."""
    content = result.get("content") or {}
    return {**content, "workspace": result.get("workspace")}


# -- contexts


def _declare_contexts(kind: str) -> None:
    def get_context() -> Json:
        return {}

    def update_context(
        content: Annotated[Json | None, Field(description="The full new context (overwrites it).")] = None,
        patch_content: Annotated[
            Json | None, Field(description='Keys to add or change; a key set to "__DELETE__" is removed.')
        ] = None,
    ) -> Json:
        return {"content": content, "patch": patch_content}

    noun = f"{kind} context"
    CATALOG.alias(
        GROUP,
        f"get_{kind}_context",
        f"ConPort: read the {noun}.",
        name=f"get_{kind}_context",
        workspace=WS,
        shape=_context,
    )(get_context)
    CATALOG.alias(
        GROUP,
        f"update_{kind}_context",
        f"ConPort: replace (content) or patch (patch_content) the {noun}.",
        name=f"update_{kind}_context",
        workspace=WS,
        shape=_status(f"{kind.capitalize()} context updated successfully."),
    )(update_context)


_declare_contexts("product")
_declare_contexts("active")


# -- decisions


@CATALOG.alias(
    GROUP, "log_decision", "ConPort: log an architectural or implementation decision.", workspace=WS, shape=_one
)
def log_decision(
    summary: Annotated[str, Field(min_length=1)],
    rationale: str | None = None,
    implementation_details: str | None = None,
    tags: Tags = None,
) -> Json:
    return {"summary": summary, "rationale": rationale, "implementation_details": implementation_details, "tags": tags}


@CATALOG.alias(
    GROUP,
    "get_decisions",
    "ConPort: decisions, newest first, optionally by tags.",
    workspace=WS,
    shape=_listed("decisions"),
)
def get_decisions(
    limit: Limit = None, tags_filter_include_all: Tags = None, tags_filter_include_any: Tags = None
) -> Json:
    return {"limit": limit, "tags_all": tags_filter_include_all, "tags_any": tags_filter_include_any}


@CATALOG.alias(
    GROUP,
    "search",
    "ConPort: full-text search across decisions.",
    name="search_decisions_fts",
    workspace=WS,
    shape=_hits,
)
def search_decisions_fts(query_term: QueryTerm, limit: Limit = 10) -> Json:
    return {"query": query_term, "limit": limit, "types": ["decision"], "mode": "words"}


@CATALOG.alias(
    GROUP,
    "delete_decision",
    "ConPort: delete a decision by its id.",
    name="delete_decision_by_id",
    workspace=WS,
    shape=_status("Decision ID {decision_id} deleted successfully."),
)
def delete_decision_by_id(decision_id: Annotated[int, Field(ge=1)]) -> Json:
    return {"decision_id": decision_id}


# -- progress


@CATALOG.alias(
    GROUP, "log_progress", "ConPort: log a progress entry (a task and its status).", workspace=WS, shape=_one
)
def log_progress(
    status: str,
    description: str,
    parent_id: Annotated[int | None, Field(ge=1)] = None,
    linked_item_type: str | None = None,
    linked_item_id: str | None = None,
    link_relationship_type: str = "relates_to_progress",
) -> Json:
    linked = {}
    if linked_item_type is not None or linked_item_id is not None:
        linked = {
            "linked_item_type": _type(linked_item_type) if linked_item_type is not None else None,
            "linked_item_id": _id(linked_item_id, "linked_item_id") if linked_item_id is not None else None,
            "link_relationship": link_relationship_type,
        }
    return {"status": status, "description": description, "parent_id": parent_id, **linked}


@CATALOG.alias(
    GROUP,
    "get_progress",
    "ConPort: progress entries, newest first, by status or parent.",
    workspace=WS,
    shape=_listed("progress"),
)
def get_progress(
    status_filter: str | None = None, parent_id_filter: Annotated[int | None, Field(ge=1)] = None, limit: Limit = None
) -> Json:
    return {"status": status_filter, "parent_id": parent_id_filter, "limit": limit}


@CATALOG.alias(
    GROUP,
    "update_progress",
    "ConPort: change a progress entry's status, description or parent.",
    workspace=WS,
    shape=_status("Progress entry ID {progress_id} updated successfully."),
)
def update_progress(
    progress_id: Annotated[int, Field(ge=1)],
    status: str | None = None,
    description: str | None = None,
    parent_id: Annotated[int | None, Field(ge=0)] = None,
) -> Json:
    return {"progress_id": progress_id, "status": status, "description": description, "parent_id": parent_id}


@CATALOG.alias(
    GROUP,
    "delete_progress",
    "ConPort: delete a progress entry by its id.",
    name="delete_progress_by_id",
    workspace=WS,
    shape=_status("Progress entry ID {progress_id} deleted successfully."),
)
def delete_progress_by_id(progress_id: Annotated[int, Field(ge=1)]) -> Json:
    return {"progress_id": progress_id}


# -- system patterns


@CATALOG.alias(
    GROUP, "log_system_pattern", "ConPort: log or update a system pattern (by name).", workspace=WS, shape=_one
)
def log_system_pattern(
    name: Annotated[str, Field(min_length=1)], description: str | None = None, tags: Tags = None
) -> Json:
    return {"name": name, "description": description or "", "tags": tags}


@CATALOG.alias(
    GROUP,
    "get_system_patterns",
    "ConPort: system patterns, optionally by tags.",
    workspace=WS,
    shape=_listed("system_patterns"),
)
def get_system_patterns(
    limit: Limit = None, tags_filter_include_all: Tags = None, tags_filter_include_any: Tags = None
) -> Json:
    return {"limit": limit, "tags_all": tags_filter_include_all, "tags_any": tags_filter_include_any}


@CATALOG.alias(
    GROUP,
    "delete_system_pattern",
    "ConPort: delete a system pattern by its id.",
    name="delete_system_pattern_by_id",
    workspace=WS,
    shape=_status("System pattern ID {pattern_id} deleted successfully."),
)
def delete_system_pattern_by_id(pattern_id: Annotated[int, Field(ge=1)]) -> Json:
    return {"pattern_id": pattern_id}


# -- custom data


@CATALOG.alias(GROUP, "log_custom_data", "ConPort: store a JSON value under (category, key).", workspace=WS, shape=_one)
def log_custom_data(
    category: Annotated[str, Field(min_length=1)], key: Annotated[str, Field(min_length=1)], value: Any
) -> Json:
    return {"category": category, "key": key, "value": value}


@CATALOG.alias(
    GROUP, "get_custom_data", "ConPort: custom data, by category and key.", workspace=WS, shape=_listed("items")
)
def get_custom_data(category: str | None = None, key: str | None = None) -> Json:
    return {"category": category, "key": key}


@CATALOG.alias(
    GROUP,
    "delete_custom_data",
    "ConPort: delete the custom data under (category, key).",
    workspace=WS,
    shape=_status("Custom data '{category}/{key}' deleted."),
)
def delete_custom_data(category: Annotated[str, Field(min_length=1)], key: Annotated[str, Field(min_length=1)]) -> Json:
    return {"category": category, "key": key}


@CATALOG.alias(
    GROUP,
    "search",
    "ConPort: full-text search of the project glossary.",
    name="search_project_glossary_fts",
    workspace=WS,
    shape=_hits,
)
def search_project_glossary_fts(query_term: QueryTerm, limit: Limit = 10) -> Json:
    return {
        "query": query_term,
        "limit": limit,
        "types": ["custom_data"],
        "category": "ProjectGlossary",
        "mode": "words",
    }


@CATALOG.alias(
    GROUP,
    "search",
    "ConPort: full-text search of custom data values.",
    name="search_custom_data_value_fts",
    workspace=WS,
    shape=_hits,
)
def search_custom_data_value_fts(query_term: QueryTerm, category_filter: str | None = None, limit: Limit = 10) -> Json:
    return {"query": query_term, "limit": limit, "types": ["custom_data"], "category": category_filter, "mode": "words"}


# -- export, import, links, batch, history, activity, schema, search


@CATALOG.alias(
    GROUP,
    "export",
    "ConPort: export the memory as markdown files under the workspace.",
    name="export_conport_to_markdown",
    workspace=WS,
    shape=_status("ConPort data exported."),
)
def export_conport_to_markdown(
    output_path: Annotated[
        str | None, Field(description="Directory inside the workspace, relative to its root.")
    ] = None,
) -> Json:
    return {"format": "markdown", "output_dir": output_path}


@CATALOG.alias(
    GROUP,
    "import",
    "ConPort: import markdown written by export_conport_to_markdown.",
    name="import_markdown_to_conport",
    workspace=WS,
    shape=_status("ConPort data imported."),
)
def import_markdown_to_conport(
    input_path: Annotated[
        str | None, Field(description="Directory inside the workspace, relative to its root.")
    ] = None,
) -> Json:
    return {"input_dir": input_path, "mode": "merge"}


@CATALOG.alias(
    GROUP,
    "link_items",
    "ConPort: link two items with a relationship.",
    name="link_conport_items",
    workspace=WS,
    shape=_one,
)
def link_conport_items(
    source_item_type: str,
    source_item_id: ItemId,
    target_item_type: str,
    target_item_id: ItemId,
    relationship_type: Annotated[str, Field(min_length=1)],
    description: str | None = None,
) -> Json:
    return {
        "source_type": _type(source_item_type),
        "source_id": _id(source_item_id, "source_item_id"),
        "target_type": _type(target_item_type),
        "target_id": _id(target_item_id, "target_item_id"),
        "relationship": relationship_type,
        "description": description,
    }


@CATALOG.alias(GROUP, "get_linked_items", "ConPort: items linked to an item.", workspace=WS, shape=_listed("items"))
def get_linked_items(
    item_type: str,
    item_id: ItemId,
    relationship_type_filter: str | None = None,
    linked_item_type_filter: str | None = None,
    limit: Limit = None,
) -> Json:
    return {
        "item_type": _type(item_type),
        "item_id": _id(item_id, "item_id"),
        "relationship": relationship_type_filter,
        "linked_type": _type(linked_item_type_filter) if linked_item_type_filter else None,
    }


@CATALOG.alias(
    GROUP,
    "batch_log_items",
    "ConPort: log several items of one type in one call.",
    workspace=WS,
    shape=lambda r, a: {
        "status": "success",
        "message": f"Batch log for '{a['item_type']}': {r.get('count', 0)} succeeded, 0 failed.",
        "successful_items": [_item(i) for i in r.get("items") or []],
        "failed_items": [],
        "workspace": r.get("workspace"),
    },
)
def batch_log_items(item_type: str, items: list[Json]) -> Json:
    return {"item_type": _type(item_type), "items": items}


@CATALOG.alias(
    GROUP,
    "get_item_history",
    "ConPort: earlier versions of the product or active context.",
    workspace=WS,
    shape=_listed("versions"),
)
def get_item_history(
    item_type: str,
    limit: Limit = None,
    before_timestamp: str | None = None,
    after_timestamp: str | None = None,
    version: Annotated[int | None, Field(ge=1)] = None,
) -> Json:
    return {
        "item_type": item_type,
        "limit": limit,
        "before": before_timestamp,
        "after": after_timestamp,
        "version": version,
    }


@CATALOG.alias(
    GROUP,
    "get_recent_activity",
    "ConPort: what changed recently, by item type.",
    name="get_recent_activity_summary",
    workspace=WS,
)
def get_recent_activity_summary(
    hours_ago: Annotated[float | None, Field(gt=0, le=87_600)] = None,
    since_timestamp: str | None = None,
    limit_per_type: Annotated[int | None, Field(ge=1, le=100)] = 5,
) -> Json:
    # As ConPort: since_timestamp, when given, wins over hours_ago (Homeport's own tool refuses both).
    return {
        "hours_ago": None if since_timestamp else hours_ago,
        "since": since_timestamp,
        "limit_per_type": limit_per_type,
    }


def _conport_schema(result: Json, _args: Json) -> Json:
    """ConPort answers with its tools' argument schemas, by name: these aliases' own."""
    return {name: spec._arguments_model.model_json_schema() for name, spec in CATALOG.aliases(GROUP).items()}


@CATALOG.alias(
    GROUP,
    "get_memory_schema",
    "ConPort: the argument schemas of the ConPort tools.",
    name="get_conport_schema",
    workspace=WS,
    shape=_conport_schema,
)
def get_conport_schema() -> Json:
    return {}


@CATALOG.alias(
    GROUP,
    "search",
    "ConPort: search by meaning across decisions, patterns, progress and custom data.",
    name="semantic_search_conport",
    workspace=WS,
    shape=_hits,
)
def semantic_search_conport(
    query_text: Annotated[str, Field(min_length=1)],
    top_k: Annotated[int, Field(ge=1, le=25)] = 5,
    filter_item_types: list[str] | None = None,
    filter_tags_include_any: Tags = None,
    filter_tags_include_all: Tags = None,
    filter_custom_data_categories: list[str] | None = None,
) -> Json:
    if filter_tags_include_all:
        raise InvalidArgumentError(
            "semantic_search_conport: filter_tags_include_all is not supported here; nothing was done. Use "
            "filter_tags_include_any, or search_decisions_fts / get_decisions with tags_filter_include_all"
        )
    categories = filter_custom_data_categories or []
    if len(categories) > 1:
        raise InvalidArgumentError(
            "semantic_search_conport: filter_custom_data_categories takes one category here, not "
            f"{len(categories)}; nothing was done. Call once per category"
        )
    types = [_type(t) for t in filter_item_types] if filter_item_types else None
    return {
        "query": query_text,
        "limit": top_k,
        "types": types,
        "tags_any": filter_tags_include_any,
        "category": categories[0] if categories else None,
        "mode": "auto",
    }


@CATALOG.alias(
    GROUP,
    "where_am_i",
    "ConPort: which workspace a path resolves to, and how it was detected.",
    name="get_workspace_detection_info",
)
def get_workspace_detection_info(
    start_path: Annotated[str | None, Field(description="An absolute path; default: how this call resolves.")] = None,
) -> Json:
    return {"workspace": start_path}
