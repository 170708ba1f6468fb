"""What one MCP request tells us: principal, headers, query, connection state, client roots.

This is the only module that touches the SDK's per-connection object. On 2025-era
connections (handshake, sessions) its `state` dict lives as long as the connection and holds the
session default and the cached roots; on 2026-07-28 every request gets a fresh one, so nothing
persists there, as that protocol requires. State is also bound to the principal that created it.

Roots, when the client declares the capability, bound every call whatever named its workspace:

- 2025 era with a session: asked once over the back-channel (at most `roots_timeout_seconds`), cached
  for the connection, dropped on `notifications/roots/list_changed`; a client that does not
  answer is remembered and the connection goes on as without roots.
- 2026-07-28: there is no back-channel and no connection state, so a call answers with an
  `InputRequiredResult` asking for them and the client's retry carries them (one extra exchange),
  unless its workspace is a `use_workspace` handle, which was checked against the roots when it
  was issued and is bound to them.
- An empty list means "no roots" (MCP Inspector declares the capability and lists none).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import anyio
from mcp import MCPError
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context
from mcp.types import InputRequiredResult, ListRootsRequest, ListRootsResult
from mcp_types.version import is_version_at_least
from pydantic import ValidationError

from homeport.core.runtime import Runtime
from homeport.errors import InvalidWorkspaceError
from homeport.mesh.forward_headers import (
    AGENT_HEADER,
    CLAIMS_HEADER,
    FORWARDED_HEADER,
    forwarded_agent,
    forwarded_claims,
)
from homeport.server.owner_token import ForwarderToken
from homeport.workspace import CallInputs

__all__ = [
    "LOCAL_PRINCIPAL",
    "ROOTS_INPUT",
    "SSE_MESSAGES_PATH",
    "SSE_PATH",
    "WORKSPACE_QUERY",
    "McpRequest",
    "claims_of",
    "forget_roots",
    "principal_of",
    "workspaces_chosen",
]

LOCAL_PRINCIPAL = "local"
# The legacy HTTP+SSE transport (2024-11-05): the event stream, and where its messages are posted
# (`?session_id=` names the connection, as Mcp-Session-Id does on Streamable HTTP).
SSE_PATH = "/sse"
SSE_MESSAGES_PATH = "/messages/"
WORKSPACE_HEADER = "x-workspace-id"
WORKSPACE_QUERY = "project_path"
_SESSION_DEFAULT = "homeport.session_workspace"
_ROOTS = "homeport.roots"
_ROOTS_NOTE = "homeport.roots_note"
_PRINCIPAL = "homeport.principal"
# The key of our roots/list question in an InputRequiredResult, and of its answer on the retry (2026-07-28).
ROOTS_INPUT = "homeport.roots"
_STATELESS_ERA = "2026-07-28"
_T = TypeVar("_T")


class _once(Generic[_T]):
    """`functools.cached_property` without the lock Python 3.11 takes on each first access.

    A request object lives for one call on one task, and every one of its properties is first read
    on each call, so that lock was paid several times per call for nothing.
    """

    def __init__(self, fn: Callable[[Any], _T]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    def __get__(self, obj: Any, owner: type | None = None) -> _T:
        value = self.fn(obj)
        obj.__dict__[self.name] = value  # later reads find the instance attribute, not this descriptor
        return value


class McpRequest:
    """One MCP tool call's request, as the pipeline sees it (`server.pipeline.CallRequest`)."""

    def __init__(self, ctx: Context, runtime: Runtime) -> None:
        self.ctx = ctx
        self.runtime = runtime

    @_once
    def http_request(self) -> Any:
        """The Starlette request over HTTP, None over stdio and in memory."""
        return self.ctx.request_context.request

    @_once
    def principal(self) -> str:
        """The verified bearer token's subject over HTTP with auth; `local` otherwise. Never an argument."""
        request = self.http_request
        return principal_of(get_access_token(), request.headers if request is not None else None)

    @_once
    def agent(self) -> str | None:
        """The calling agent: the verified token's subject over HTTP, else the server's --agent (stdio only).

        A call forwarded with this owner's own token names its agent in a header (`server.owner_token`);
        that header counts with no other token.
        """
        token = get_access_token()
        if isinstance(token, ForwarderToken):
            return forwarded_agent(self.http_request.headers.get(AGENT_HEADER))
        if token is not None:
            return token.subject or token.client_id
        if self.http_request is not None:
            return None  # anonymous HTTP callers are nobody's agent, whatever --agent says
        return self.runtime.settings.agent

    @_once
    def claims(self) -> Mapping[str, Any]:
        """The verified token's claims (a JWT's payload); empty for Homeport's own tokens and without auth.

        A call forwarded with this owner's own token carries the claims the front end verified for its
        agent in a header (`server.owner_token`); that header counts with no other token.
        """
        request = self.http_request
        return claims_of(get_access_token(), request.headers if request is not None else None)

    @property
    def client(self) -> tuple[str | None, str | None]:
        """The client's name and version from the handshake (2025) or the request envelope (2026-07-28)."""
        params = self.ctx.session.client_params
        if params is None:
            return None, None
        return params.client_info.name, params.client_info.version

    @_once
    def forwarded(self) -> bool:
        request = self.http_request
        return request is not None and bool(request.headers.get(FORWARDED_HEADER))

    @_once
    def stateless(self) -> bool:
        version = self.ctx.protocol_version
        return version is not None and is_version_at_least(version, _STATELESS_ERA)

    @_once
    def has_session(self) -> bool:
        """True on 2025-era connections whose state outlives the request."""
        if self.stateless:
            return False
        request = self.http_request
        if request is not None:  # HTTP: only stateful sessions persist; an SSE connection is one
            if request.url.path == SSE_MESSAGES_PATH:
                return bool(request.query_params.get("session_id"))
            return bool(request.headers.get("mcp-session-id"))
        return True

    def _state(self) -> dict[str, Any]:
        """The per-connection state dict, emptied if another principal presents this connection."""
        if not self.has_session:
            return {}
        state: dict[str, Any] = self.ctx.session._connection.state  # no public accessor in mcp 2.3
        if state.get(_PRINCIPAL, self.principal) != self.principal:
            state.clear()
        state[_PRINCIPAL] = self.principal
        return state

    def inputs(self, argument: str | None) -> CallInputs:
        """Everything the resolver needs from this request, as plain values (roots come from `attach_roots`).

        Raises:
            InvalidWorkspaceError: an X-Workspace-Id header that is not UTF-8.
        """
        request = self.http_request
        chosen = dict(workspaces_chosen(request)) if request is not None else {}
        return CallInputs(
            principal=self.principal,
            argument=argument,
            header=chosen.get("header"),
            query=chosen.get("query"),
            session=self._state().get(_SESSION_DEFAULT),
        )

    async def attach_roots(self, inputs: CallInputs) -> CallInputs | InputRequiredResult:
        caps = self.ctx.client_capabilities
        if caps is None or caps.roots is None:
            return inputs
        if self.stateless:
            answer = (self.ctx.input_responses or {}).get(ROOTS_INPUT)
            if answer is None:
                if self.runtime.handles.bound_to_roots(inputs.argument, self.principal):
                    return inputs  # the handle carries the roots it was checked against
                return InputRequiredResult(input_requests={ROOTS_INPUT: ListRootsRequest()})
            try:
                listed = ListRootsResult.model_validate(
                    answer.model_dump(mode="json", by_alias=True, exclude_none=True)
                )
            except ValidationError:
                return dataclasses.replace(inputs, roots_note="the client answered roots/list with something else")
            return _with_roots(inputs, listed)
        state = self._state()
        if _ROOTS in state or _ROOTS_NOTE in state:
            return dataclasses.replace(inputs, roots=state.get(_ROOTS), roots_note=state.get(_ROOTS_NOTE, ""))
        if not self.ctx.session.can_send_request:  # stateless 2025-era HTTP: nobody to ask
            return dataclasses.replace(inputs, roots_note="declared, but this connection cannot carry roots/list")
        note = ""
        listed_roots: ListRootsResult | None = None
        timeout = self.runtime.settings.roots_timeout_seconds
        with anyio.move_on_after(timeout):
            try:
                listed_roots = await self.ctx.session.list_roots()
            except MCPError as exc:
                note = f"declared, but the client failed roots/list ({exc.error.message})"
        if listed_roots is None and not note:
            note = f"declared, but the client did not answer roots/list within {timeout:g} s"
        attached = _with_roots(inputs, listed_roots) if listed_roots is not None else inputs
        attached = dataclasses.replace(attached, roots_note=attached.roots_note or note)
        if self.has_session:
            state[_ROOTS] = attached.roots
            state[_ROOTS_NOTE] = attached.roots_note
        return attached

    def bind_session(self, root: str) -> bool:
        if not self.has_session:
            return False
        self._state()[_SESSION_DEFAULT] = root
        return True

    def describe(self) -> dict[str, Any]:
        return {"protocol_version": self.ctx.protocol_version, "session": self.has_session}


def principal_of(token: AccessToken | None, headers: Mapping[str, str] | None) -> str:
    """Who a request's verified token names: its subject (or client id); `local` without one.

    A call forwarded with this owner's own token names its agent in a header (`server.owner_token`).
    """
    if token is None:
        return LOCAL_PRINCIPAL
    if isinstance(token, ForwarderToken):
        return forwarded_agent(headers.get(AGENT_HEADER) if headers is not None else None) or LOCAL_PRINCIPAL
    return token.subject or token.client_id or LOCAL_PRINCIPAL


def claims_of(token: AccessToken | None, headers: Mapping[str, str] | None) -> Mapping[str, Any]:
    """The claims a request's verified token carries (a JWT's payload); empty for Homeport's own tokens.

    A call forwarded with this owner's own token carries the claims the front end verified for its
    agent in a header (`server.forward_headers`).

    Raises:
        InvalidArgumentError: that header is not a JSON object.
    """
    if token is None:
        return {}
    if isinstance(token, ForwarderToken):
        return forwarded_claims(headers.get(CLAIMS_HEADER) if headers is not None else None)
    return token.claims or {}


def workspaces_chosen(request: Any) -> list[tuple[str, str]]:
    """The workspaces an HTTP request chooses, as (source, value): `header` (X-Workspace-Id, UTF-8),
    then `query` (?project_path=); the resolver prefers them in that order.

    Raises:
        InvalidWorkspaceError: an X-Workspace-Id header that is not UTF-8.
    """
    chosen = [
        ("header", _utf8_header(request.headers.get(WORKSPACE_HEADER))),
        ("query", request.query_params.get(WORKSPACE_QUERY) or None),
    ]
    return [(source, value) for source, value in chosen if value]


def forget_roots(ctx: Any) -> None:
    """Drop the cached roots of the connection behind `ctx` (on roots/list_changed)."""
    state = ctx.session._connection.state
    state.pop(_ROOTS, None)
    state.pop(_ROOTS_NOTE, None)


def _with_roots(inputs: CallInputs, listed: ListRootsResult) -> CallInputs:
    uris = tuple(str(r.uri) for r in listed.roots)
    if not uris:
        return dataclasses.replace(inputs, roots=None, roots_note="declared, but the client listed no roots")
    return dataclasses.replace(inputs, roots=uris)


def _utf8_header(value: str | None) -> str | None:
    """HTTP headers arrive decoded as Latin-1; a workspace path is UTF-8 bytes."""
    if not value:
        return None
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        raise InvalidWorkspaceError(
            "the X-Workspace-Id header is not UTF-8; send the path as UTF-8, or as a file:// URI with "
            "percent-encoding (file:///home/ana/caf%C3%A9)"
        ) from None
