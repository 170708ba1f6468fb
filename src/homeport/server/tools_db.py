"""Project-database tools: the workspace's own development database, read-only by default."""

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from homeport.server.runtime import Runtime
from homeport.server.tooling import READ, Reply, WorkspaceArg, workspace_runner

__all__ = ["register_db_tools"]

Json = dict[str, Any]
# Read-only unless the workspace's .homeport/config.toml sets allow_writes, so not declared read-only.
QUERY = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


def register_db_tools(mcp: MCPServer, runtime: Runtime) -> None:
    run = workspace_runner(runtime)
    databases = runtime.databases

    @mcp.tool(
        annotations=READ,
        description=(
            "List the tables of the project's development database (found in .homeport/config.toml, .env, "
            "Laravel, Rails or Django settings). Then call get_schema for a table."
        ),
    )
    async def get_tables(ctx: Context, workspace: WorkspaceArg = None) -> Reply:
        return await run(ctx, workspace, False, lambda _s, root: databases.get_tables(root), with_root=True)

    @mcp.tool(
        annotations=READ,
        description=(
            "Columns (type, nullable, default, primary key), indexes, foreign keys and a CREATE-like text of a table."
        ),
    )
    async def get_schema(ctx: Context, table: str, workspace: WorkspaceArg = None) -> Reply:
        return await run(ctx, workspace, False, lambda _s, root: databases.get_schema(root, table), with_root=True)

    @mcp.tool(
        annotations=READ,
        description=(
            "The database's dialect (sqlite, postgresql, mysql, mariadb), server version and where the connection "
            "came from, so you write the right SQL."
        ),
    )
    async def get_database_type(ctx: Context, workspace: WorkspaceArg = None) -> Reply:
        return await run(ctx, workspace, False, lambda _s, root: databases.get_database_type(root), with_root=True)

    @mcp.tool(
        annotations=QUERY,
        description=(
            "Run ONE SQL statement and get {columns, rows, row_count, truncated, elapsed_ms, affected_rows, "
            "read_only}. Read-only unless the workspace's .homeport/config.toml allows writes; statement "
            "timeout and row limit apply. Use params for values instead of pasting them into the SQL."
        ),
    )
    async def run_query(
        ctx: Context,
        query: str,
        params: Annotated[
            dict[str, Any] | None, Field(description="Values for :name placeholders in the query.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=10_000)] = 200,
        workspace: WorkspaceArg = None,
    ) -> Reply:
        return await run(
            ctx,
            workspace,
            False,
            lambda _s, root: databases.run_query(root, query, params=params, limit=limit),
            with_root=True,
        )
