"""A forwarded tool call on the wire: one stateless (2026-07-28) JSON-RPC request to the owner.

The SDK's client cost about 1.3 ms of CPU per call here, against 0.8 ms for the HTTP request
itself (`python3 bench/forwarding.py`, the front end's CPU per forwarded call), for machinery a
forwarded call never uses: the 2026-07-28 era has no handshake and no session, and the call
declares no client capabilities, so the owner never asks it anything back (no roots, no
sampling). What remains is one POST with the era's headers and `_meta` envelope, answered with one
JSON body, or with an event stream whose message with our id is the response; both are read. The
owner's `CallToolResult` comes back as it was sent, errors included: as its JSON (`ToolResult`) to the
shell, which loads none of the MCP SDK for it, and as the SDK's type (`as_call_tool_result`) where a
server hands it on to its own client. The owner's 403 for the workspace the call was sent with comes
back as the tool error that refusal is per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import urlsplit

from homeport import __version__
from homeport.errors import WorkspaceAccessDeniedError
from homeport.mesh.forward_headers import AGENT_HEADER, CLAIMS_HEADER, FORWARDED_HEADER
from homeport.mesh.owner_http import CONNECT_SECONDS, READ_SECONDS, OwnerConnections, OwnerIdentity
from homeport.registry import Owner
from homeport.registry.liveness import UNIX_SCHEME
from homeport.registry.proof import proof_key

if TYPE_CHECKING:
    import httpx2
    from mcp.types import CallToolResult

__all__ = [
    "ClientPool",
    "OwnerRefusedError",
    "ToolResult",
    "as_call_tool_result",
    "async_client",
    "call_owner",
    "call_tool",
    "owner_connections",
    "owner_headers",
]

PROTOCOL_VERSION = "2026-07-28"
_REQUEST_ID = 1
_BASE_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Mcp-Protocol-Version": PROTOCOL_VERSION,
}
_META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "homeport-forwarder", "version": __version__},
    "io.modelcontextprotocol/clientCapabilities": {},
}


ToolResult = dict[str, Any]  # a `CallToolResult` as JSON: content, structuredContent, isError


def as_call_tool_result(result: ToolResult) -> CallToolResult:
    """The SDK's `CallToolResult` for an owner's answer, for a server to hand on to its client."""
    from mcp.types import CallToolResult

    return CallToolResult.model_validate(result)


class OwnerRefusedError(Exception):
    """The owner answered, but not with a tool result (a protocol or HTTP-level refusal)."""


def owner_headers(
    owner: Owner, root: Path, agent: str | None, claims: str | None = None, secret: bytes | None = None
) -> dict[str, str]:
    """What every call for `root` as `agent` carries: the workspace, the forwarding mark, the owner's
    `secret` as its bearer token when it requires agents (--auth), and the agent's verified claims
    (`claims_header`) when it has some. Sent only once the owner has proved itself (`owner_http`)."""
    headers = {"X-Workspace-Id": str(root), FORWARDED_HEADER: str(os.getpid())}
    if owner.auth and secret is not None:
        headers["Authorization"] = f"Bearer {secret.decode('utf-8', 'replace')}"
    if agent is not None:
        headers[AGENT_HEADER] = agent
    if claims is not None:
        headers[CLAIMS_HEADER] = claims
    return headers


def owner_connections(
    owner: Owner, root: Path, agent: str | None, claims: str | None, secret: bytes
) -> OwnerConnections:
    """Kept-alive connections to `owner` for calls on `root` as `agent` with `claims` (`server.owner_http`);
    each new one is used once the peer has proved, with `secret`, that it is `owner`."""
    headers = {**_BASE_HEADERS, **owner_headers(owner, root, agent, claims, secret)}
    identity = OwnerIdentity(owner.pid, proof_key(secret))
    if owner.endpoint.startswith(UNIX_SCHEME):
        return OwnerConnections(headers=headers, identity=identity, uds=owner.endpoint[len(UNIX_SCHEME) :])
    parts = urlsplit(owner.endpoint)
    return OwnerConnections(
        headers=headers, identity=identity, host=parts.hostname or "127.0.0.1", port=parts.port or 80
    )


async def call_owner(
    conns: OwnerConnections, tool: str, arguments: Mapping[str, Any], client: _ClientInfo | None = None
) -> ToolResult:
    """`call_tool` to an owner on this machine, on its kept-alive connections.

    Raises:
        OwnerRefusedError: the owner answered without a tool result.
        OSError, TimeoutError, h11.ProtocolError: the owner did not answer.
    """
    body, headers = _request(tool, arguments, client)
    answer = await conns.post("/mcp", body, headers)
    return _answer(answer.status, answer.content_type, answer.body.decode("utf-8", "replace"))


def async_client(headers: Mapping[str, str]) -> httpx2.AsyncClient:
    """An HTTP client for MCP calls to a remote server (a team server) sending `headers` on each."""
    import httpx2

    return httpx2.AsyncClient(
        headers={**_BASE_HEADERS, **headers}, timeout=httpx2.Timeout(CONNECT_SECONDS, read=READ_SECONDS)
    )


_Key = tuple[object, ...]
_ClientInfo = tuple[str | None, str | None]


class _Closable(Protocol):
    async def aclose(self) -> None: ...


_C = TypeVar("_C", bound=_Closable)


class ClientPool:
    """HTTP clients shared by every call after the first, one per key, on the running event loop.

    Per loop (one process has one; a runtime used from several loops stays correct), and closed
    when that loop shuts down (it cancels every task, the pool's closer among them) or on `close`.
    """

    def __init__(self) -> None:
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Key, Any]] = weakref.WeakKeyDictionary()
        self._closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[None]] = (
            weakref.WeakKeyDictionary()
        )

    def client(self, key: _Key, make: Callable[[], _C]) -> _C:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools[loop] = {}
            self._closers[loop] = loop.create_task(_close_at_end(pool), name="homeport-client-pool")
        http: _C | None = pool.get(key)
        if http is None:
            http = pool[key] = make()
        return http

    async def drop(self, key: _Key) -> None:
        """Forget (and close) the client for `key`, after a failure: the next call connects afresh."""
        http = self._pools.get(asyncio.get_running_loop(), {}).pop(key, None)
        if http is not None:
            with contextlib.suppress(Exception):
                await http.aclose()

    def close(self) -> None:
        for loop, closer in list(self._closers.items()):
            with contextlib.suppress(RuntimeError):  # the loop is closed: its shutdown closed the clients
                loop.call_soon_threadsafe(closer.cancel)


async def _close_at_end(pool: dict[_Key, Any]) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        for http in list(pool.values()):
            with contextlib.suppress(Exception):
                await http.aclose()
        pool.clear()


async def call_tool(
    http: httpx2.AsyncClient, url: str, tool: str, arguments: Mapping[str, Any], client: _ClientInfo | None = None
) -> ToolResult:
    """The owner's result of `tool(arguments)`, made on behalf of `client` (name, version: the caller's
    own client, which the owner records as the writer's; without a name, this forwarder).

    Raises:
        OwnerRefusedError: the owner answered without a tool result.
        httpx2.TransportError: the owner did not answer.
    """
    body, headers = _request(tool, arguments, client)
    return _result(await http.post(url, content=body, headers=headers))


def _request(
    tool: str, arguments: Mapping[str, Any], client: _ClientInfo | None = None
) -> tuple[bytes, dict[str, str]]:
    meta = _META
    if client is not None and client[0]:
        meta = {**_META, "io.modelcontextprotocol/clientInfo": {"name": client[0], "version": client[1] or ""}}
    message = {
        "jsonrpc": "2.0",
        "id": _REQUEST_ID,
        "method": "tools/call",
        "params": {"name": tool, "arguments": dict(arguments), "_meta": meta},
    }
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    return body, {"Mcp-Method": "tools/call", "Mcp-Name": tool}


def _result(response: httpx2.Response) -> ToolResult:
    return _answer(response.status_code, response.headers.get("content-type", ""), response.text)


def _answer(status: int, content_type: str, text: str) -> ToolResult:
    """The tool result in an owner's HTTP answer (JSON or an event stream).

    Raises:
        OwnerRefusedError: the answer holds no tool result (a JSON-RPC error, an HTTP error, no JSON).
    """
    kind = content_type.split(";")[0].strip()
    try:
        message = _sse_response(text) if kind == "text/event-stream" else json.loads(text)
    except ValueError:
        message = None
    if not isinstance(message, dict):
        raise OwnerRefusedError(f"HTTP {status} without a JSON-RPC answer: {text[:200]!r}")
    if "error" in message:
        error = message["error"] if isinstance(message["error"], dict) else {}
        data = error.get("data")
        if status == 403 and isinstance(data, dict) and data.get("code") == WorkspaceAccessDeniedError.code:
            # The owner's 403 for the workspace this call was sent with (`server.workspace_gate`): for
            # the caller, the tool error the same refusal is when the workspace is named in the call.
            return _refusal(WorkspaceAccessDeniedError.code, str(error.get("message", "")))
        raise OwnerRefusedError(f"HTTP {status}: {error.get('message', message['error'])}")
    result = message.get("result")
    if status != 200 or not isinstance(result, dict):
        raise OwnerRefusedError(f"HTTP {status} without a result: {text[:200]!r}")
    return result


def _refusal(code: str, text: str) -> ToolResult:
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"error": {"code": code, "message": text.removesuffix(f" [{code}]")}},
        "isError": True,
    }


def _sse_response(text: str) -> dict[str, Any] | None:
    """The JSON-RPC response (the message with our id) in an event stream; notifications are skipped."""
    for event in text.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:"))
        if not data:
            continue
        message = json.loads(data)
        if isinstance(message, dict) and message.get("id") == _REQUEST_ID:
            return message
    return None
