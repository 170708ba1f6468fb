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
- Only `file://` roots are directories. The SDK's `Root` type admits no other scheme, so a client
  that lists `https://...` beside its folder would fail the SDK's validation (an internal error on
  every 2025-era call, a protocol error on 2026-07-28 ones); the listing is read here instead, the
  other roots are ignored and named in the roots note (`where_am_i`), and they still count as
  declared: a client whose roots are all elsewhere gets no workspace, as one with remote folders.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import anyio
from mcp import MCPError
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context
from mcp.types import InputRequiredResult, ListRootsRequest, ListRootsResult, Root
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
    "STATELESS_ERA",
    "WORKSPACE_QUERY",
    "McpRequest",
    "caller_of",
    "claims_of",
    "forget_roots",
    "lenient_roots_answer",
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
STATELESS_ERA = _STATELESS_ERA = "2026-07-28"
# Where a 2026-07-28 roots answer carries the roots taken out of it (`lenient_roots_answer`).
_IGNORED_ROOTS = "homeport/ignored_roots"
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
        """The verified bearer token's subject over HTTP with auth; over stdio the --agent the access rules
        name (`caller_of`); `local` otherwise. Never an argument."""
        return caller_of(self.runtime, get_access_token(), self.http_request)[0]

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
        return caller_of(self.runtime, get_access_token(), self.http_request)[1]

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
            ignored = (listed.meta or {}).get(_IGNORED_ROOTS) or ()
            return _with_roots(inputs, listed, tuple(str(uri) for uri in ignored))
        state = self._state()
        if _ROOTS in state or _ROOTS_NOTE in state:
            return dataclasses.replace(inputs, roots=state.get(_ROOTS), roots_note=state.get(_ROOTS_NOTE, ""))
        if not self.ctx.session.can_send_request:  # stateless 2025-era HTTP: nobody to ask
            return dataclasses.replace(inputs, roots_note="declared, but this connection cannot carry roots/list")
        note = ""
        listed_roots: tuple[ListRootsResult, tuple[str, ...]] | None = None
        timeout = self.runtime.settings.roots_timeout_seconds
        with anyio.move_on_after(timeout):
            try:
                # Not session.list_roots(): its validation refuses a whole listing for one root that is not
                # file:// (the SDK's type), which would fail every call of the connection.
                raw = await self.ctx.session._connection.outbound.send_raw_request("roots/list", None)
                listed_roots = _split_roots(raw)
            except MCPError as exc:
                note = f"declared, but the client failed roots/list ({exc.error.message})"
            except ValidationError:
                note = "declared, but the client answered roots/list with something else"
        if listed_roots is None and not note:
            note = f"declared, but the client did not answer roots/list within {timeout:g} s"
        attached = _with_roots(inputs, *listed_roots) if listed_roots is not None else inputs
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


def caller_of(runtime: Runtime, token: AccessToken | None, request: Any) -> tuple[str, Mapping[str, Any]]:
    """Who calls, and the claims the access rules see: the verified token's over HTTP (`principal_of`,
    `claims_of`); over stdio with --agent and --access-rules, that agent, so that rules naming it apply.

    Over stdio the user chose the agent's name when they started the server: the rules are a policy
    for the user's own agents, not a boundary against the user (docs/access-rules.md).

    Raises:
        InvalidArgumentError: a forwarded call's claims header is not a JSON object.
    """
    headers = request.headers if request is not None else None
    if token is None and request is None:
        settings = runtime.settings
        if settings.transport == "stdio" and settings.agent and settings.access_rules_file is not None:
            return settings.agent, {}
    return principal_of(token, headers), claims_of(token, headers)


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


def _with_roots(inputs: CallInputs, listed: ListRootsResult, ignored: tuple[str, ...] = ()) -> CallInputs:
    # The ignored roots stay among the declared ones: the resolver admits nothing inside a root that is no
    # local directory, so a client whose roots are all elsewhere gets no workspace rather than no bound.
    uris = tuple(str(r.uri) for r in listed.roots) + ignored
    if not uris:
        return dataclasses.replace(inputs, roots=None, roots_note="declared, but the client listed no roots")
    note = ""
    if ignored:
        note = (
            f"ignored the client's roots that are not file:// URIs ({', '.join(ignored)}): only local "
            "directories bound a workspace"
        )
    return dataclasses.replace(inputs, roots=uris, roots_note=note)


def _split_roots(raw: Mapping[str, Any]) -> tuple[ListRootsResult, tuple[str, ...]]:
    """A roots/list answer as the roots the SDK's type admits (file:// URIs) and the URIs of the others.

    Raises:
        ValidationError: the answer is not a roots listing at all.
    """
    entries = raw.get("roots") if isinstance(raw, Mapping) else None
    if not isinstance(entries, list):
        return ListRootsResult.model_validate(raw, by_name=False), ()  # raises, naming what is wrong
    kept: list[Root] = []
    ignored: list[str] = []
    for entry in entries:
        try:
            kept.append(Root.model_validate(entry, by_name=False))
        except ValidationError:
            uri = entry.get("uri") if isinstance(entry, Mapping) else None
            ignored.append(_shown(uri if isinstance(uri, str) else json.dumps(entry, default=str)))
    return ListRootsResult(roots=kept), tuple(ignored)


def _shown(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."


async def lenient_roots_answer(ctx: Any, call_next: Any) -> Any:
    """SDK middleware: a 2026-07-28 call whose roots answer lists roots the SDK's type refuses (not
    file://) goes on with those roots moved into the answer's `_meta`, where `attach_roots` finds them,
    instead of failing as invalid parameters."""
    params = ctx.params
    if ctx.method != "tools/call" or not isinstance(params, Mapping):
        return await call_next(ctx)
    responses = params.get("inputResponses")
    answer = responses.get(ROOTS_INPUT) if isinstance(responses, Mapping) else None
    if not isinstance(answer, Mapping) or not isinstance(answer.get("roots"), list):
        return await call_next(ctx)
    listed, ignored = _split_roots({"roots": answer["roots"]})
    if not ignored:
        return await call_next(ctx)
    meta = answer.get("_meta")
    meta = meta if isinstance(meta, Mapping) else {}
    cleaned = {
        **answer,
        "roots": [root.model_dump(mode="json", by_alias=True, exclude_none=True) for root in listed.roots],
        "_meta": {**meta, _IGNORED_ROOTS: list(ignored)},
    }
    assert isinstance(responses, Mapping)
    return await call_next(
        dataclasses.replace(ctx, params={**params, "inputResponses": {**responses, ROOTS_INPUT: cleaned}})
    )


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
