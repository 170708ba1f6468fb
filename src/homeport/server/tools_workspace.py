"""Workspace tools: pick a workspace for later calls, and ask where a call lands and why."""
# Annotations stay evaluated here: tool signatures use a per-runtime `Roots` alias built at registration.

import dataclasses
from typing import Annotated, Any

from mcp import types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context, ListRoots, Resolve
from pydantic import Field

from homeport.errors import HomeportError
from homeport.server.request import (
    call_inputs,
    has_session,
    principal_of,
    roots_declared,
    set_session_workspace,
)
from homeport.server.runtime import Runtime
from homeport.server.tooling import READ, WRITE_IDEMPOTENT, WorkspaceArg, roots_param, run_blocking, tool_error
from homeport.store import store_path_for

__all__ = ["register_workspace_tools"]


async def _declared_roots(ctx: Context) -> types.ListRootsResult | ListRoots | None:
    return ListRoots() if roots_declared(ctx) else None


def register_workspace_tools(mcp: MCPServer, runtime: Runtime) -> None:
    Roots = roots_param(runtime)

    @mcp.tool(
        annotations=WRITE_IDEMPOTENT,
        description=(
            "Choose the project for later calls. Returns a handle to pass as `workspace`; on clients with "
            "sessions (2025-era) it also becomes this session's default."
        ),
    )
    async def use_workspace(
        ctx: Context,
        roots: Roots,
        workspace: Annotated[str, Field(description="The project's absolute path or file:// URI.")],
    ) -> dict[str, Any]:
        inputs = call_inputs(ctx, workspace, roots)
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
    async def where_am_i(
        ctx: Context,
        roots: Roots,
        declared: Annotated[types.ListRootsResult | None, Resolve(_declared_roots)],
        workspace: WorkspaceArg = None,
    ) -> dict[str, Any]:
        inputs = call_inputs(ctx, workspace, roots)
        seen = runtime.resolver.observe(dataclasses.replace(inputs, roots=_uris(declared)))
        report: dict[str, Any] = {
            "transport": runtime.settings.transport,
            "protocol_version": ctx.protocol_version,
            "session": has_session(ctx),
            "principal": principal_of(ctx),
            "declared_roots": _uris(declared),
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


def _uris(roots: types.ListRootsResult | None) -> list[str] | None:
    return None if roots is None else [str(r.uri) for r in roots.roots]
