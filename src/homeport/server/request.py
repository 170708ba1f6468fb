"""What one MCP request tells us: principal, headers, query, connection state, client roots.

This is the only module that touches the SDK's per-connection object. On 2025-era
connections (handshake, sessions) its `state` dict lives as long as the connection and holds the
session default and the cached roots; on 2026-07-28 every request gets a fresh one, so nothing
persists there, as that protocol requires. State is also bound to the principal that created it.
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context, ListRoots
from mcp_types.version import is_version_at_least

from homeport.workspace import CallInputs, WorkspaceResolver

__all__ = [
    "LOCAL_PRINCIPAL",
    "agent_of",
    "call_inputs",
    "connection_state",
    "forget_roots",
    "has_session",
    "principal_of",
    "roots_declared",
    "roots_if_needed",
    "set_session_workspace",
]

LOCAL_PRINCIPAL = "local"
WORKSPACE_HEADER = "x-workspace-id"
WORKSPACE_QUERY = "project_path"
_SESSION_DEFAULT = "homeport.session_workspace"
_ROOTS = "homeport.roots"
_PRINCIPAL = "homeport.principal"


def principal_of(ctx: Context) -> str:
    """The verified bearer token's subject over HTTP with auth; `local` otherwise. Never an argument."""
    token = get_access_token()
    if token is None:
        return LOCAL_PRINCIPAL
    return token.subject or token.client_id or LOCAL_PRINCIPAL


def agent_of(ctx: Context, stdio_agent: str | None) -> str | None:
    """The calling agent: the verified token's subject over HTTP, else the server's --agent (stdio only)."""
    token = get_access_token()
    if token is not None:
        return token.subject or token.client_id
    if ctx.request_context.request is not None:
        return None  # anonymous HTTP callers are nobody's agent, whatever --agent says
    return stdio_agent


def has_session(ctx: Context) -> bool:
    """True on 2025-era connections whose state outlives the request."""
    if is_version_at_least(ctx.protocol_version, "2026-07-28"):
        return False
    if ctx.request_context.request is not None:  # HTTP: only stateful sessions persist
        return bool(ctx.headers and ctx.headers.get("mcp-session-id"))
    return True


def connection_state(ctx: Context) -> dict[str, Any]:
    """The per-connection state dict, emptied if another principal presents this connection."""
    state: dict[str, Any] = ctx.session._connection.state  # no public accessor in mcp 2.3
    principal = principal_of(ctx)
    if state.get(_PRINCIPAL, principal) != principal:
        state.clear()
    state[_PRINCIPAL] = principal
    return state


def set_session_workspace(ctx: Context, root: str) -> bool:
    if not has_session(ctx):
        return False
    connection_state(ctx)[_SESSION_DEFAULT] = root
    return True


def forget_roots(ctx: Any) -> None:
    """Drop the cached roots of the connection behind `ctx` (on roots/list_changed)."""
    ctx.session._connection.state.pop(_ROOTS, None)


def _http_value(ctx: Context, kind: str) -> str | None:
    request = ctx.request_context.request
    if request is None:
        return None
    if kind == "header":
        return request.headers.get(WORKSPACE_HEADER) or None
    return request.query_params.get(WORKSPACE_QUERY) or None


def call_inputs(ctx: Context, workspace: str | None, roots: types.ListRootsResult | None) -> CallInputs:
    """Everything the resolver needs from this request, as plain values."""
    state = connection_state(ctx) if has_session(ctx) else {}
    if roots is not None and has_session(ctx):
        state[_ROOTS] = roots
    return CallInputs(
        principal=principal_of(ctx),
        argument=workspace or None,
        header=_http_value(ctx, "header"),
        query=_http_value(ctx, "query"),
        session=state.get(_SESSION_DEFAULT),
        roots=None if roots is None else [str(r.uri) for r in roots.roots],
    )


def roots_declared(ctx: Context) -> bool:
    caps = ctx.client_capabilities
    return caps is not None and caps.roots is not None


def roots_if_needed(resolver: WorkspaceResolver):
    """A `Resolve` function: the client's roots, fetched only when sources 1-5 gave nothing."""

    async def maybe_roots(ctx: Context, workspace: str | None = None) -> types.ListRootsResult | ListRoots | None:
        if not roots_declared(ctx):
            return None
        state = connection_state(ctx) if has_session(ctx) else {}
        probe = CallInputs(
            argument=workspace or None,
            header=_http_value(ctx, "header"),
            query=_http_value(ctx, "query"),
            session=state.get(_SESSION_DEFAULT),
        )
        if not resolver.needs_roots(probe):
            return None
        cached = state.get(_ROOTS)
        return cached if cached is not None else ListRoots()

    return maybe_roots
