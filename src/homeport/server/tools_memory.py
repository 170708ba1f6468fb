"""Memory tools: product and active context, decisions, progress, custom data, search."""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import Field

from homeport.server.runtime import Runtime
from homeport.server.tooling import (
    DELETE,
    READ,
    WRITE,
    WRITE_IDEMPOTENT,
    Reply,
    WorkspaceArg,
    workspace_runner,
)
from homeport.store import contexts, custom_data, decisions, patterns, progress

__all__ = ["Json", "TagsArg", "register_memory_tools"]

Json = dict[str, Any]
ContentArg = Annotated[Json | None, Field(description="The whole new document (replaces it). Give this or patch.")]
PatchArg = Annotated[
    Json | None,
    Field(description='Keys to merge into the document; a key set to "__DELETE__" is removed. Give this or content.'),
]
TagsArg = Annotated[list[str] | None, Field(description="Tags; matched case-insensitively.")]


def register_memory_tools(mcp: MCPServer, runtime: Runtime) -> None:

    run = workspace_runner(runtime)

    _register_context_tools(mcp, run, "product", "product context: goals, features, architecture")
    _register_context_tools(mcp, run, "active", "active context: current focus, recent changes, open questions")

    @mcp.tool(annotations=WRITE, description="Record a decision (what, why, how). Returns its id for links and search.")
    async def log_decision(
        ctx: Context,
        summary: str,
        rationale: str | None = None,
        implementation_details: str | None = None,
        tags: TagsArg = None,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            True,
            lambda s: decisions.log_decision(
                s, summary, rationale=rationale, implementation_details=implementation_details, tags=tags
            ),
        )

    @mcp.tool(annotations=READ, description="List decisions, newest first, optionally by tags.")
    async def get_decisions(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=1000)] = 20,
        tags_any: TagsArg = None,
        tags_all: TagsArg = None,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            False,
            lambda s: decisions.get_decisions(s, limit=limit, tags_any=tags_any, tags_all=tags_all),
            key="decisions",
        )

    @mcp.tool(
        annotations=WRITE,
        description=(
            "Record a progress entry (task). status is free text; common: TODO, IN_PROGRESS, DONE, BLOCKED. "
            "parent_id nests it under another entry."
        ),
    )
    async def log_progress(
        ctx: Context,
        status: str,
        description: str,
        parent_id: int | None = None,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx, workspace, True, lambda s: progress.log_progress(s, status, description, parent_id=parent_id)
        )

    @mcp.tool(
        annotations=WRITE_IDEMPOTENT,
        description=(
            "Change the status, description or parent of a progress entry; parent_id=0 moves it to the top level."
        ),
    )
    async def update_progress(
        ctx: Context,
        progress_id: int,
        status: str | None = None,
        description: str | None = None,
        parent_id: int | None = None,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            True,
            lambda s: progress.update_progress(
                s, progress_id, status=status, description=description, parent_id=parent_id
            ),
        )

    @mcp.tool(
        annotations=READ,
        description=(
            "List progress entries, newest first, optionally by status or parent. tree=true returns them nested "
            "under `children` instead: the subtree of parent_id, or every top-level entry."
        ),
    )
    async def get_progress(
        ctx: Context,
        status: str | None = None,
        parent_id: int | None = None,
        limit: Annotated[int, Field(ge=1, le=1000)] = 50,
        tree: bool = False,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        if tree:
            return await run(
                ctx,
                workspace,
                False,
                lambda s: progress.get_progress_tree(s, root_id=parent_id, status=status),
                key="progress",
            )
        return await run(
            ctx,
            workspace,
            False,
            lambda s: progress.get_progress(s, status=status, parent_id=parent_id, limit=limit),
            key="progress",
        )

    @mcp.tool(
        annotations=DELETE,
        description=(
            "Delete a progress entry with its links. An entry with children is refused unless cascade=true, "
            "which deletes the whole subtree. Returns what was removed."
        ),
    )
    async def delete_progress(
        ctx: Context, progress_id: int, cascade: bool = False, workspace: WorkspaceArg = None
    ) -> Reply:
        return await run(ctx, workspace, True, lambda s: progress.delete_progress(s, progress_id, cascade=cascade))

    @mcp.tool(annotations=DELETE, description="Delete a decision with its tags and links. Returns what was removed.")
    async def delete_decision(ctx: Context, decision_id: int, workspace: WorkspaceArg = None) -> Reply:
        return await run(ctx, workspace, True, lambda s: decisions.delete_decision(s, decision_id))

    @mcp.tool(annotations=DELETE, description="Delete the custom data under (category, key). Returns what was removed.")
    async def delete_custom_data(ctx: Context, category: str, key: str, workspace: WorkspaceArg = None) -> Reply:
        return await run(ctx, workspace, True, lambda s: custom_data.delete_custom_data(s, category, key))

    @mcp.tool(
        annotations=WRITE_IDEMPOTENT,
        description=(
            "Record a system pattern (a reusable way the project does something). Logging an existing name "
            "(any case) updates that pattern."
        ),
    )
    async def log_system_pattern(
        ctx: Context, name: str, description: str, tags: TagsArg = None, workspace: WorkspaceArg = None
    ) -> Reply:
        return await run(ctx, workspace, True, lambda s: patterns.log_system_pattern(s, name, description, tags=tags))

    @mcp.tool(annotations=READ, description="List system patterns by name, optionally by tags.")
    async def get_system_patterns(
        ctx: Context,
        tags_any: TagsArg = None,
        tags_all: TagsArg = None,
        limit: Annotated[int, Field(ge=1, le=1000)] = 50,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            False,
            lambda s: patterns.get_system_patterns(s, tags_any=tags_any, tags_all=tags_all, limit=limit),
            key="system_patterns",
        )

    @mcp.tool(
        annotations=DELETE, description="Delete a system pattern with its tags and links. Returns what was removed."
    )
    async def delete_system_pattern(ctx: Context, pattern_id: int, workspace: WorkspaceArg = None) -> Reply:
        return await run(ctx, workspace, True, lambda s: patterns.delete_system_pattern(s, pattern_id))

    @mcp.tool(
        annotations=WRITE_IDEMPOTENT,
        description=(
            "Store any JSON value under (category, key), replacing an existing one. The category "
            "ProjectGlossary is the project glossary."
        ),
    )
    async def log_custom_data(
        ctx: Context, category: str, key: str, value: Any, workspace: WorkspaceArg = None
    ) -> Reply:
        return await run(ctx, workspace, True, lambda s: custom_data.log_custom_data(s, category, key, value))

    @mcp.tool(annotations=READ, description="Read custom data, optionally one category or one (category, key).")
    async def get_custom_data(
        ctx: Context, category: str | None = None, key: str | None = None, workspace: WorkspaceArg = None
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            False,
            lambda s: custom_data.get_custom_data(s, category=category, key=key),
            key="items",
        )


def _register_context_tools(
    mcp: MCPServer, run: Callable[..., Awaitable[Reply]], kind: contexts.ContextKind, noun: str
) -> None:
    async def get_ctx(ctx: Context, workspace: WorkspaceArg = None) -> Reply:
        return await run(ctx, workspace, False, lambda s: contexts.get_context(s, kind))

    async def update_ctx(
        ctx: Context,
        content: ContentArg = None,
        patch: PatchArg = None,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(ctx, workspace, True, lambda s: contexts.update_context(s, kind, content=content, patch=patch))

    mcp.add_tool(
        get_ctx,
        name=f"get_{kind}_context",
        annotations=READ,
        description=f"Read the {noun} (a JSON document) with its version.",
    )
    mcp.add_tool(
        update_ctx,
        name=f"update_{kind}_context",
        annotations=WRITE_IDEMPOTENT,
        description=f"Replace (content) or patch (patch) the {noun}; every change keeps a version.",
    )
