"""What one MCP request tells us: principal, headers, query, connection state, client roots.

This is the only module that touches the SDK's per-connection object. On 2025-era
connections (handshake, sessions) its `state` dict lives as long as the connection and holds the
session default and the cached roots; on 2026-07-28 every request gets a fresh one, so nothing
persists there, as that protocol requires. State is also bound to the principal that created it.
"""

from __future__ import annotations

from typing import Any

from mcp import MCPError
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context
from mcp.types import InputRequiredResult, ListRootsRequest, ListRootsResult
from mcp_types.version import is_version_at_least
from pydantic import ValidationError

from homeport.workspace import CallInputs

__all__ = [
    "LOCAL_PRINCIPAL",
    "agent_of",
    "call_inputs",
    "connection_state",
    "fetch_roots",
    "forget_roots",
    "has_session",
    "principal_of",
    "root_uris",
    "roots_declared",
    "set_session_workspace",
]

LOCAL_PRINCIPAL = "local"
WORKSPACE_HEADER = "x-workspace-id"
WORKSPACE_QUERY = "project_path"
_SESSION_DEFAULT = "homeport.session_workspace"
_ROOTS = "homeport.roots"
_PRINCIPAL = "homeport.principal"
# The key of our roots/list question in an InputRequiredResult, and of its answer on the retry (2026-07-28).
ROOTS_INPUT = "homeport.roots"
_STATELESS_ERA = "2026-07-28"


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


def _stateless_era(ctx: Context) -> bool:
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, _STATELESS_ERA)


def has_session(ctx: Context) -> bool:
    """True on 2025-era connections whose state outlives the request."""
    if _stateless_era(ctx):
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


def call_inputs(ctx: Context, workspace: str | None) -> CallInputs:
    """Everything the resolver needs from this request, as plain values (roots come from `fetch_roots`)."""
    session = has_session(ctx)
    state = connection_state(ctx) if session else {}
    request = ctx.request_context.request
    return CallInputs(
        principal=principal_of(ctx),
        argument=workspace or None,
        header=(request.headers.get(WORKSPACE_HEADER) or None) if request is not None else None,
        query=(request.query_params.get(WORKSPACE_QUERY) or None) if request is not None else None,
        session=state.get(_SESSION_DEFAULT),
    )


def roots_declared(ctx: Context) -> bool:
    caps = ctx.client_capabilities
    return caps is not None and caps.roots is not None


async def fetch_roots(ctx: Context) -> ListRootsResult | InputRequiredResult | None:
    """The client's roots, or None when it declared none or cannot be asked.

    2025-era sessions ask over the back-channel once and keep the answer for the connection (until
    roots/list_changed). On 2026-07-28 there is no back-channel: the call answers with an
    InputRequiredResult carrying a roots/list request, and the client's retry brings the roots in
    its input responses. Callers fetch roots only when no higher source named the workspace.
    """
    if not roots_declared(ctx):
        return None
    if _stateless_era(ctx):
        answer = (ctx.input_responses or {}).get(ROOTS_INPUT)
        if answer is None:
            return InputRequiredResult(input_requests={ROOTS_INPUT: ListRootsRequest()})
        try:
            return ListRootsResult.model_validate(answer.model_dump(mode="json", by_alias=True, exclude_none=True))
        except ValidationError:
            return None  # an answer that is not a roots list: treated as no roots, the resolver says so
    session = has_session(ctx)
    state = connection_state(ctx) if session else {}
    cached: ListRootsResult | None = state.get(_ROOTS)
    if cached is not None:
        return cached
    if not ctx.session.can_send_request:  # stateless 2025-era HTTP: nobody to ask
        return None
    try:
        roots: ListRootsResult = await ctx.session.list_roots()
    except MCPError:
        return None  # the client failed to list them: as if it had none
    if session:
        state[_ROOTS] = roots
    return roots


def root_uris(roots: ListRootsResult | None) -> list[str] | None:
    return None if roots is None else [str(r.uri) for r in roots.roots]
