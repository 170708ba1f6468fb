"""Workspace tools: pick a workspace for later calls, and ask where a call lands and why."""

import dataclasses
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import InputRequiredResult
from pydantic import Field

from homeport.errors import HomeportError
from homeport.server.request import (
    call_inputs,
    fetch_roots,
    has_session,
    principal_of,
    root_uris,
    set_session_workspace,
)
from homeport.server.runtime import Runtime
from homeport.server.tooling import READ, WRITE_IDEMPOTENT, Reply, WorkspaceArg, run_blocking, tool_error
from homeport.store import store_path_for

__all__ = ["register_workspace_tools"]


def register_workspace_tools(mcp: MCPServer, runtime: Runtime) -> None:

    @mcp.tool(
        annotations=WRITE_IDEMPOTENT,
        description=(
            "Choose the project for later calls. Returns a handle to pass as `workspace`; on clients with "
            "sessions (2025-era) it also becomes this session's default."
        ),
    )
    async def use_workspace(
        ctx: Context,
        workspace: Annotated[str, Field(description="The project's absolute path or file:// URI.")],
    ) -> dict[str, Any]:
        inputs = call_inputs(ctx, workspace)  # the argument decides: roots are never needed
        try:
            resolved = await run_blocking(runtime, lambda: runtime.resolve(inputs, write=False))
        except HomeportError as exc:
            raise tool_error(exc) from exc
        handle = runtime.handles.mint(principal_of(ctx), resolved.root)
        bound = set_session_workspace(ctx, str(resolved.root))
        return {
            "handle": handle,
            "root": str(resolved.root),
            "store": str(store_path_for(resolved.root)),
            "bound_to_session": bound,
            "workspace": resolved.describe(),
        }

    @mcp.tool(
        annotations=READ,
        description=(
            "Say which workspace a call would use, from which source and why, what every source saw, the "
            "store path, transport and protocol version. Call this first when unsure where memory goes."
        ),
    )
    async def where_am_i(ctx: Context, workspace: WorkspaceArg = None) -> Reply:
        declared = await fetch_roots(ctx)  # always, when the client has roots: the report lists them
        if isinstance(declared, InputRequiredResult):
            return declared
        inputs = call_inputs(ctx, workspace)
        uris = root_uris(declared)
        seen = runtime.resolver.observe(dataclasses.replace(inputs, roots=uris))
        if runtime.resolver.needs_roots(inputs):
            inputs = dataclasses.replace(inputs, roots=uris)
        report: dict[str, Any] = {
            "transport": runtime.settings.transport,
            "protocol_version": ctx.protocol_version,
            "session": has_session(ctx),
            "principal": principal_of(ctx),
            "declared_roots": uris,
            "sources": [s.describe() for s in seen],
            "allowed_roots": [str(p) for p in runtime.resolver.settings.guard.allow_roots],
        }
        try:
            resolved = await run_blocking(runtime, lambda: runtime.resolve(inputs, write=False))
        except HomeportError as exc:
            return {**report, "workspace": None, "error": f"{exc.message} [{exc.code}]"}
        store = store_path_for(resolved.root)
        return {
            **report,
            "workspace": resolved.describe(),
            "root": str(resolved.root),
            "source": resolved.source.value,
            "why": resolved.reason,
            "store": str(store),
            "store_exists": store.exists(),
        }
