"""File-area tools: private and shared folders of agents and teams (DESIGN.md section 5)."""
# Annotations stay evaluated here, like the other tool modules.

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import Field

from homeport.errors import HomeportError
from homeport.server.request import agent_of
from homeport.server.runtime import Runtime
from homeport.server.tooling import DELETE, READ, WRITE_IDEMPOTENT, run_blocking, tool_error

__all__ = ["register_file_tools"]

Json = dict[str, Any]
FolderArg = Annotated[str, Field(description="An agent id or team id of your organization (see list_folders).")]
ScopeArg = Annotated[Literal["private", "shared"], Field(description="The folder's private or shared area.")]
PathArg = Annotated[str, Field(description="A relative path inside the area, e.g. notes/plan.md.")]


def register_file_tools(mcp: MCPServer, runtime: Runtime) -> None:
    service = runtime.files

    async def call(ctx: Context, work: Callable[[str | None], Any]) -> dict[str, Any]:
        agent = agent_of(ctx, runtime.settings.agent)
        try:
            return await run_blocking(runtime, lambda: work(agent))
        except HomeportError as exc:
            raise tool_error(exc) from exc

    @mcp.tool(
        annotations=READ,
        description=(
            "List the folders you may read: my_private, my_shared, team_private, team_shared, or org_shared (every "
            "shared folder of your organization you can read). Use folder_id and scope with the *_by_id tools."
        ),
    )
    async def list_folders(
        ctx: Context, scope: Literal["my_private", "my_shared", "team_private", "team_shared", "org_shared"]
    ) -> Json:
        return {"folders": await call(ctx, lambda agent: service.list_folders(agent, scope))}

    @mcp.tool(annotations=READ, description="List the files in a folder's area (recursive=true for the whole tree).")
    async def list_files(
        ctx: Context, folder_id: FolderArg, scope: ScopeArg, path: str = "", recursive: bool = False
    ) -> Json:
        return await call(
            ctx,
            lambda agent: service.run(
                agent, folder_id, scope, "read", "list_folder_entries", path, recursive=recursive
            ),
        )

    @mcp.tool(annotations=READ, description="Read a file from a folder's area; binary files come back base64.")
    async def read_file_by_id(ctx: Context, folder_id: FolderArg, scope: ScopeArg, path: PathArg) -> Json:
        return await call(
            ctx,
            lambda agent: service.run(agent, folder_id, scope, "read", "read_file", path, max_bytes=service.max_bytes),
        )

    @mcp.tool(
        annotations=WRITE_IDEMPOTENT,
        description=(
            "Write a file (atomically, replacing it) in your own or your team's area; folders are created on first "
            "write. encoding=base64 for binary content."
        ),
    )
    async def write_file_by_id(
        ctx: Context,
        folder_id: FolderArg,
        scope: ScopeArg,
        path: PathArg,
        content: str,
        encoding: Literal["utf-8", "base64"] = "utf-8",
    ) -> Json:
        return await call(
            ctx,
            lambda agent: service.run(
                agent,
                folder_id,
                scope,
                "write",
                "write_file",
                path,
                content=content,
                encoding=encoding,
                max_bytes=service.max_bytes,
            ),
        )

    @mcp.tool(annotations=DELETE, description="Delete a file (or an empty folder) from your own or your team's area.")
    async def delete_file_by_id(ctx: Context, folder_id: FolderArg, scope: ScopeArg, path: PathArg) -> Json:
        return await call(ctx, lambda agent: service.run(agent, folder_id, scope, "delete", "delete_file", path))

    @mcp.tool(annotations=READ, description='Size, modification time and sha256 of a file; path "" is the area itself.')
    async def get_file_info_by_id(ctx: Context, folder_id: FolderArg, scope: ScopeArg, path: str) -> Json:
        return await call(ctx, lambda agent: service.run(agent, folder_id, scope, "read", "file_info", path))
