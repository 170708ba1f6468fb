"""Memory tools across item types: search, links, ready work, history, activity, schema, batch, export/import."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from pydantic import Field

from homeport.core import citing
from homeport.core.catalog import CATALOG, READ, REPLACE, WRITE, WRITE_IDEMPOTENT, Needs, Scan
from homeport.core.pipeline import Call
from homeport.core.project_switches import check_project_switches
from homeport.core.semantic import SearchMode
from homeport.core.tools.memory import IdArg, Json, LimitArg
from homeport.errors import InvalidWorkspaceError, WorkspaceDeniedError
from homeport.store import activity, batch, blocking, catalog, item_history, lifecycle, links, transfer
from homeport.store.fields import MAX_QUERY_CHARS, LongText, Relationship
from homeport.store.loop_calls import may_wait
from homeport.workspace import CallInputs, Workspace

__all__ = ["ItemType"]

ItemType = Literal["decision", "progress", "system_pattern", "custom_data", "product_context", "active_context"]
BatchType = Literal["decision", "progress", "system_pattern", "custom_data"]
# A query across more projects than this is a crawl, not a search.
MAX_EXTRA_WORKSPACES = 20
TimeArg = Annotated[str | None, Field(description="ISO 8601 time, e.g. 2026-11-21T09:00:00Z.")]


@CATALOG.tool(
    "memory",
    READ,
    "Search every item type, best first. mode: auto (default) fuses word and meaning matches; words is "
    'full-text only (FTS5 syntax works: "exact phrase", prefix*, OR); semantic is by meaning only. Results '
    "say mode_used and not_yet_embedded. category narrows to custom data of that category (ProjectGlossary: "
    "the glossary). workspaces adds other projects (read-only, each checked as `workspace` is): every result "
    "then names its `workspace`.",
    name="search",
)
def search_items(
    call: Call,
    query: Annotated[str, Field(max_length=MAX_QUERY_CHARS)],
    types: Annotated[list[ItemType] | None, Field(description="Limit to these item types.")] = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
    tags_any: Annotated[list[str] | None, Field(description="Items with any of these tags.")] = None,
    category: str | None = None,
    since: TimeArg = None,
    mode: SearchMode = "auto",
    workspaces: Annotated[
        list[str] | None,
        Field(
            max_length=MAX_EXTRA_WORKSPACES,
            description="Also search these projects (absolute paths, file:// URIs or handles), with `workspace`.",
        ),
    ] = None,
) -> Any:
    def one(store: Any) -> dict[str, Any]:
        hidden = lifecycle.hidden_of(store)  # archived, superseded, expired: left out, counted
        wider = min(limit + len(hidden), 200)
        found: dict[str, Any] = call.runtime.semantic.search(
            store, query, mode=mode, types=types, tags_any=tags_any, category=category, since=since, limit=wider
        )
        if hidden:
            found["results"], passed = lifecycle.visible(found["results"], hidden, limit)
            if passed:
                found["hidden_expired"] = passed
        return found

    if not workspaces:
        embedded = call.runtime.semantic.embed_waiting(call.store, mode=mode)  # a shell command's own, first
        with citing.one_read(call):  # the hits and their citations from one snapshot
            found = one(call.store)
            found["results"] = citing.annotate_hits(call, found["results"])  # stale ones last, labelled
        if embedded:
            found["embedded_now"] = embedded
        return found
    assert call.workspace is not None
    searched = [call.workspace, *_other_workspaces(call, workspaces)]
    hits: list[dict[str, Any]] = []
    modes: set[str] = set()
    notes: list[str] = []
    for workspace in searched:
        store = call.store if workspace is call.workspace else call.runtime.store_for(workspace, write=False)
        found = one(store)
        modes.add(found["mode_used"])
        if found.get("note"):
            notes.append(f"{workspace.key}: {found['note']}")
        hits.extend({**hit, "workspace": workspace.key} for hit in found["results"])
    # Scores of one mode compare across stores (the same ranking function); best first, then by workspace order.
    order = {w.key: i for i, w in enumerate(searched)}
    hits.sort(key=lambda hit: (-float(hit.get("score") or 0.0), order[hit["workspace"]]))
    out: dict[str, Any] = {
        "results": hits[:limit],
        "mode_used": modes.pop() if len(modes) == 1 else "mixed",
        "workspaces": [w.describe() for w in searched],
    }
    if notes:
        out["note"] = "; ".join(notes)
    return out


def _other_workspaces(call: Call, named: list[str]) -> list[Workspace]:
    """The workspaces `named` (beside the call's own), each resolved and access-checked exactly as the
    `workspace` argument is: the same guards, the same principal, bounded by the client's roots the call's
    own workspace was checked against (a handle carries them), and the project's switches. Duplicates of
    the call's workspace or of each other are searched once.

    Raises:
        WorkspaceError: a workspace that does not resolve, is outside a guard or the client's roots, or
            the call was forwarded (an owner does not know the roots of the client behind the forwarder).
        PermissionDeniedError: the caller may not read one, or its project turns search off.
    """
    assert call.workspace is not None and call.inputs is not None
    if call.request.forwarded:
        raise WorkspaceDeniedError(
            "search with workspaces was forwarded here by another Homeport, and this process does not know the "
            "roots of the client behind it, which bound every workspace it names; nothing was searched. Search "
            "each workspace on its own, or call the Homeport the client talks to"
        )
    roots = call.inputs.roots
    if roots is None and call.workspace.client_roots is not None:
        roots = tuple(root.as_uri() for root in call.workspace.client_roots)
    spec = CATALOG["search"]
    seen = {call.workspace.key}
    found: list[Workspace] = []
    for argument in named:
        may_wait("the other workspaces' directories and stores")
        inputs = CallInputs(principal=call.inputs.principal, argument=argument or None, roots=roots)
        inputs = dataclasses.replace(inputs, roots_note=call.inputs.roots_note)
        if inputs.argument is None:
            raise InvalidWorkspaceError("workspaces lists an empty name; give each as an absolute path or file:// URI")
        workspace = call.runtime.resolve(inputs, write=False)
        call.runtime.access.check(
            call.request.principal,
            workspace.root,
            write=False,
            claims=call.request.claims,
            key=workspace.logical_key,
        )
        if workspace.logical_key is None:
            check_project_switches(workspace.root, spec)
            team = call.runtime.team
            if team is not None and team.route(workspace.root) is not None:
                raise WorkspaceDeniedError(
                    f"{workspace.root} keeps its memory on its team server, which a search across workspaces "
                    "does not reach; search it on its own (without workspaces)"
                )
        if workspace.key not in seen:
            seen.add(workspace.key)
            found.append(workspace)
    return found


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Link two items with a typed relationship (e.g. implements, depends_on, relates_to). Both must exist; "
    "contexts have id 1. Linking the same pair and relationship again returns the existing link. Between "
    "progress entries, blocks / blocked_by is a dependency (get_ready_work): a link closing a cycle is refused.",
    scan=Scan.ARGUMENTS,
)
def link_items(
    call: Call,
    source_type: ItemType,
    source_id: IdArg,
    target_type: ItemType,
    target_id: IdArg,
    relationship: Relationship,
    description: LongText | None = None,
) -> Json:
    return links.link_items(
        call.require_store(), source_type, source_id, target_type, target_id, relationship, description=description
    )


@CATALOG.tool(
    "memory",
    READ,
    "Items linked to an item in either direction; depth 2-3 walks further, nearest first, each with the "
    "item it was reached through.",
    key="items",
)
def get_linked_items(
    call: Call,
    item_type: ItemType,
    item_id: IdArg,
    relationship: str | None = None,
    linked_type: ItemType | None = None,
    depth: Annotated[int, Field(ge=1, le=3)] = 1,
) -> Any:
    return links.get_linked_items(
        call.store, item_type, item_id, relationship=relationship, linked_type=linked_type, depth=depth
    )


@CATALOG.tool(
    "memory",
    READ,
    "What can be worked on now: open progress entries (status not DONE) none of whose blockers is open, each "
    "with `ready_because`; `blocked` lists the others and what blocks them. There is no priority field: "
    "ordered by status (IN_PROGRESS, TODO, others, BLOCKED), then oldest first. Block one entry on another "
    "with link_items(relationship='blocks' or 'blocked_by'); mark it DONE with update_progress.",
)
def get_ready_work(call: Call, limit: LimitArg = 50) -> Json:
    return blocking.ready_work(call.store, limit=limit)


@CATALOG.tool(
    "memory",
    READ,
    "Every version of an item, newest first, with the exact earlier text and who wrote it, when and through "
    "which tool. Decisions, progress, system patterns and custom data need item_id; their versions carry "
    "`fields` and `deleted` (the version that recorded a deletion). The contexts need no id; their versions "
    "carry `content`. version picks one, before/after bound the time; restore_version brings one back.",
    key="versions",
)
def get_item_history(
    call: Call,
    item_type: ItemType,
    limit: LimitArg = 10,
    version: IdArg | None = None,
    before: TimeArg = None,
    after: TimeArg = None,
    item_id: Annotated[IdArg | None, Field(description="The item's id (contexts: omit, or 1).")] = None,
) -> Any:
    return item_history.get_item_history(
        call.store, item_type, item_id, limit=limit, version=version, before=before, after=after
    )


@CATALOG.tool(
    "memory",
    READ,
    "What changed recently across every item type (default: the last 24 hours). The first call to make "
    "when resuming work.",
)
def get_recent_activity(
    call: Call,
    # At most ten years back: further is every item, and past that a date overflows.
    hours_ago: Annotated[float | None, Field(gt=0, le=87_600)] = None,
    since: TimeArg = None,
    limit_per_type: Annotated[int, Field(ge=1, le=100)] = 5,
) -> Json:
    return activity.recent_activity(call.store, hours_ago=hours_ago, since=since, limit_per_type=limit_per_type)


@CATALOG.tool(
    "memory",
    READ,
    "The memory's item types, their fields and the tools that read and write them.",
    needs=Needs.NOTHING,
)
def get_memory_schema(call: Call) -> Json:
    return catalog.memory_schema()


@CATALOG.tool(
    "memory",
    WRITE,
    "Write up to 500 items of one type in one transaction: all or nothing; an error names the index of the "
    "first invalid item. Items have the fields of the matching log_ tool.",
    scan=Scan.ARGUMENTS,
)
def batch_log_items(call: Call, item_type: BatchType, items: list[dict[str, Any]]) -> Json:
    written = batch.batch_log_items(call.require_store(), item_type, items)
    return {"item_type": item_type, "count": len(written), "items": written}


@CATALOG.tool(
    "memory",
    REPLACE,
    "Write the memory as files under the workspace (default .homeport/export): one file per item type, "
    "json (exact) or markdown (readable, and importable). Replaces a previous export in that directory.",
    name="export",
    create_store=False,
)
def export_tool(
    call: Call,
    format: Literal["json", "markdown"] = "json",
    output_dir: Annotated[
        str | None, Field(description="Directory inside the workspace, relative to its root.")
    ] = None,
) -> Json:
    return transfer.export_memory(call.store, call.root, fmt=format, output_dir=output_dir)


@CATALOG.tool(
    "memory",
    REPLACE,
    "Read an export back (default .homeport/export). mode=merge keeps existing items and overwrites those "
    "with the same id; mode=replace empties the memory first. Every item is validated first and the writes "
    "are one transaction: an invalid item (named with its field) imports nothing. dry_run=true reports the "
    "ids that would be added, changed and removed without writing.",
    name="import",
    scan=Scan.CONTENT,
)
def import_tool(
    call: Call,
    input_dir: str | None = None,
    mode: Literal["merge", "replace"] = "merge",
    dry_run: Annotated[bool, Field(description="Check and report what would change; write nothing.")] = False,
    allow_empty: Annotated[
        bool, Field(description="mode=replace with an export that holds no items may erase the memory.")
    ] = False,
) -> Json:
    return transfer.import_memory(
        call.require_store(),
        call.root,
        input_dir=input_dir,
        mode=mode,
        dry_run=dry_run,
        allow_empty=allow_empty,
        screen=call.screen,
    )
