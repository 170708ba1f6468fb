"""Memory tools across item types: search, links, history, activity, schema, batch, export/import."""

from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import Field

from homeport.server.runtime import Runtime
from homeport.server.tooling import READ, WRITE, WRITE_IDEMPOTENT, Reply, WorkspaceArg, workspace_runner
from homeport.store import activity, batch, catalog, contexts, links, search, transfer

__all__ = ["register_knowledge_tools"]

Json = dict[str, Any]
ItemType = Literal["decision", "progress", "system_pattern", "custom_data", "product_context", "active_context"]
BatchType = Literal["decision", "progress", "system_pattern", "custom_data"]
TimeArg = Annotated[str | None, Field(description="ISO 8601 time, e.g. 2026-11-21T09:00:00Z.")]


def register_knowledge_tools(mcp: MCPServer, runtime: Runtime) -> None:
    run = workspace_runner(runtime)

    @mcp.tool(
        name="search",
        annotations=READ,
        description=(
            "Full-text search over every item type, best first, with highlighted snippets. FTS5 syntax works "
            '("exact phrase", prefix*, OR); anything else is searched as plain words. category narrows to '
            "custom data of that category (ProjectGlossary: the glossary)."
        ),
    )
    async def search_items(
        ctx: Context,
        query: str,
        types: Annotated[list[ItemType] | None, Field(description="Limit to these item types.")] = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        tags_any: Annotated[list[str] | None, Field(description="Items with any of these tags.")] = None,
        category: str | None = None,
        since: TimeArg = None,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            False,
            lambda s: search.search(
                s, query, types=types, tags_any=tags_any, category=category, since=since, limit=limit
            ),
            key="results",
        )

    @mcp.tool(
        annotations=WRITE_IDEMPOTENT,
        description=(
            "Link two items with a typed relationship (e.g. implements, depends_on, relates_to). Both must exist; "
            "contexts have id 1. Linking the same pair and relationship again returns the existing link."
        ),
    )
    async def link_items(
        ctx: Context,
        source_type: ItemType,
        source_id: int,
        target_type: ItemType,
        target_id: int,
        relationship: str,
        description: str | None = None,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            True,
            lambda s: links.link_items(
                s, source_type, source_id, target_type, target_id, relationship, description=description
            ),
        )

    @mcp.tool(
        annotations=READ,
        description=(
            "Items linked to an item in either direction; depth 2-3 walks further, nearest first, each with the "
            "item it was reached through."
        ),
    )
    async def get_linked_items(
        ctx: Context,
        item_type: ItemType,
        item_id: int,
        relationship: str | None = None,
        linked_type: ItemType | None = None,
        depth: Annotated[int, Field(ge=1, le=3)] = 1,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            False,
            lambda s: links.get_linked_items(
                s, item_type, item_id, relationship=relationship, linked_type=linked_type, depth=depth
            ),
            key="items",
        )

    @mcp.tool(
        annotations=READ,
        description=(
            "Earlier versions of the product or active context, newest first; version picks one, before/after "
            "bound the time."
        ),
    )
    async def get_item_history(
        ctx: Context,
        item_type: Literal["product_context", "active_context"],
        limit: Annotated[int, Field(ge=1, le=1000)] = 10,
        version: int | None = None,
        before: TimeArg = None,
        after: TimeArg = None,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        kind: contexts.ContextKind = "product" if item_type == "product_context" else "active"
        return await run(
            ctx,
            workspace,
            False,
            lambda s: contexts.get_history(s, kind, limit=limit, version=version, before=before, after=after),
            key="versions",
        )

    @mcp.tool(
        annotations=READ,
        description=(
            "What changed recently across every item type (default: the last 24 hours). The first call to make "
            "when resuming work."
        ),
    )
    async def get_recent_activity(
        ctx: Context,
        hours_ago: Annotated[float | None, Field(gt=0)] = None,
        since: TimeArg = None,
        limit_per_type: Annotated[int, Field(ge=1, le=100)] = 5,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            False,
            lambda s: activity.recent_activity(s, hours_ago=hours_ago, since=since, limit_per_type=limit_per_type),
        )

    @mcp.tool(
        annotations=READ, description="The memory's item types, their fields and the tools that read and write them."
    )
    async def get_memory_schema() -> Reply:
        return catalog.memory_schema()

    @mcp.tool(
        annotations=WRITE,
        description=(
            "Write up to 500 items of one type in one transaction: all or nothing; an error names the index of the "
            "first invalid item. Items have the fields of the matching log_ tool."
        ),
    )
    async def batch_log_items(
        ctx: Context, item_type: BatchType, items: list[dict[str, Any]], workspace: WorkspaceArg = None
    ) -> Reply:
        def work(s: Any) -> Reply:
            written = batch.batch_log_items(s, item_type, items)
            return {"item_type": item_type, "count": len(written), "items": written}

        return await run(ctx, workspace, True, work)

    @mcp.tool(
        name="export",
        annotations=WRITE_IDEMPOTENT,
        description=(
            "Write the memory as files under the workspace (default .homeport/export): one file per item type, "
            "json (exact) or markdown (readable, and importable)."
        ),
    )
    async def export_tool(
        ctx: Context,
        format: Literal["json", "markdown"] = "json",
        output_dir: Annotated[
            str | None, Field(description="Directory inside the workspace, relative to its root.")
        ] = None,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            True,
            lambda s, root: transfer.export_memory(s, root, fmt=format, output_dir=output_dir),
            with_root=True,
            create=False,
        )

    @mcp.tool(
        name="import",
        annotations=WRITE,
        description=(
            "Read an export back (default .homeport/export). mode=merge keeps existing items and overwrites those "
            "with the same id; mode=replace empties the memory first. One transaction."
        ),
    )
    async def import_tool(
        ctx: Context,
        input_dir: str | None = None,
        mode: Literal["merge", "replace"] = "merge",
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            True,
            lambda s, root: transfer.import_memory(s, root, input_dir=input_dir, mode=mode),
            with_root=True,
        )
