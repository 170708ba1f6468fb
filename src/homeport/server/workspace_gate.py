"""403 for an HTTP request that chooses a workspace its principal may not use, before any MCP layer.

A request chooses a workspace with the `X-Workspace-Id` header or `?project_path=` on the URL. Under
`--auth`, once the bearer token is verified, each one the request carries must be a workspace its
principal may at least read (the access rules, or the organization's roots in the directory), or the
request is answered 403 with a JSON-RPC error naming the workspace as sent, the principal and the fix,
on /mcp (both protocol eras, every method), /sse and /messages/. Without a valid token the SDK's 401
answers first, so nobody learns anything about a workspace before they are known.

What stays a tool error (`workspace_access_denied`, HTTP 200): a workspace named inside a tool call
(the `workspace` argument or a `use_workspace` handle), where the request itself is permitted and
the refusal belongs to one call, and a write to a workspace the principal may only read, since a
2025-era request names its tool only in the body (2026-07-28 ones also in `Mcp-Name`, but a refusal
that depended on the era would answer the same call two ways). The pipeline's access step
still checks every call whatever chose its workspace; this gate only refuses earlier.

The answer never says whether the workspace exists: it names the value as sent and nothing the
resolver found. A chosen directory that resolves is checked at its project root (where the pipeline
checks it); one that does not (missing, outside the allowed roots) is checked at its canonical path,
and refused when the principal may not use that path, with the same answer.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from homeport.core.runtime import Runtime
from homeport.errors import ConfigError, HomeportError, WorkspaceAccessDeniedError
from homeport.server.request import WORKSPACE_QUERY, claims_of, principal_of, workspaces_chosen
from homeport.workspace import CallInputs, decode_candidate

__all__ = ["WorkspaceGate"]

# A server-defined JSON-RPC error code; `data.code` carries Homeport's own.
_FORBIDDEN = -32003
_NAMED_BY = {"header": "the X-Workspace-Id header", "query": f"?{WORKSPACE_QUERY}= on the URL"}


class WorkspaceGate:
    """Wraps one route's app (/mcp, /sse, /messages/), inside the SDK's authentication middleware."""

    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = get_access_token()
        if scope["type"] != "http" or token is None or not self.runtime.access.auth:
            await self.app(scope, receive, send)  # no verified principal: the SDK answers 401
            return
        request = Request(scope)
        try:
            chosen = workspaces_chosen(request)
        except HomeportError:
            chosen = []  # a header that is not UTF-8 names nothing: the call says what is wrong
        principal = principal_of(token, request.headers)
        try:
            claims = claims_of(token, request.headers)
        except HomeportError:
            claims = {}  # a forwarded claims header that is not JSON grants nothing; the call says why
        for source, value in chosen:
            if not self._may_read(principal, claims, source, value):
                await _refuse(send, principal, source, value, self._fix(principal, value))
                return
        await self.app(scope, receive, send)

    def _may_read(self, principal: str, claims: Mapping[str, Any] | None, source: str, value: str) -> bool:
        # Resolved as a call would resolve it, less the client's roots, which only a call carries. A few
        # stat calls and the rules file's stamp: on the loop, as the forwarding step resolves.
        header, query = (value, None) if source == "header" else (None, value)
        inputs = CallInputs(principal=principal, header=header, query=query)
        try:
            workspace = self.runtime.resolve(inputs, write=False)
            root, key = workspace.root, workspace.logical_key
        except HomeportError:
            if self.runtime.settings.logical_workspaces:
                return True  # not a key: the call says so, and a key names nothing on disk to hide
            try:
                root, key = Path(os.path.realpath(decode_candidate(value))), None
            except HomeportError:
                return True  # not a path at all (relative, another scheme): the call says so
        try:
            self.runtime.access.check(principal, root, write=False, claims=claims, key=key)
        except WorkspaceAccessDeniedError:
            return False
        except ConfigError:
            return True  # a broken rules file or directory refuses every call, saying why, in the pipeline
        return True

    def _fix(self, principal: str, value: str) -> str:
        rules = self.runtime.access.rules
        if rules is not None:
            return (
                f"ask an operator for a [[workspaces]] rule that gives {principal!r} read or write access to it in "
                f"{rules.path}, or run `homeport access check {shlex.quote(principal)} {shlex.quote(value)} "
                f"--access-rules {shlex.quote(str(rules.path))}` to see why"
            )
        return (
            f"ask an operator to add it to the workspace roots of {principal!r}'s organization "
            "(`homeport directory add-workspace-root ORG DIR`), or choose a workspace inside them"
        )


async def _refuse(send: Send, principal: str, source: str, value: str, fix: str) -> None:
    message = (
        f"{principal!r} may not use workspace {value!r}, chosen by {_NAMED_BY[source]}; nothing was done. "
        f"{fix[0].upper()}{fix[1:]}. [{WorkspaceAccessDeniedError.code}]"
    )
    data = {"code": WorkspaceAccessDeniedError.code, "workspace": value, "source": source, "principal": principal}
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": _FORBIDDEN, "message": message, "data": data}})
    encoded = body.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(encoded)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": encoded})
