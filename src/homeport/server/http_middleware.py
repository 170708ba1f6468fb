"""Plain ASGI middleware in front of the SDK's Streamable HTTP app.

`RequestShape` answers a POST to /mcp that cannot be a JSON-RPC message before any session or
parser sees it (415 for a wrong Content-Type, 413 naming the limit for a body declared too
large); `CallsInFlight` counts the requests being answered so a shutdown can wait for them;
`SseProjectPath` carries the `?project_path=` of a GET /sse to the messages of that connection.
They look at headers and the query only: nothing is read or copied on the way of a call.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qsl, urlencode

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CallsInFlight", "RequestShape", "SseProjectPath"]


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


async def _refuse(send: Send, status: int, code: int, message: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RequestShape:
    def __init__(self, app: ASGIApp, *, paths: tuple[str, ...], max_body_bytes: int) -> None:
        self.app = app
        self.paths = paths
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        content_type = (_header(scope, b"content-type") or b"").split(b";", 1)[0].strip().lower()
        if content_type != b"application/json":
            shown = content_type.decode("latin-1") or "none"
            await _refuse(send, 415, -32600, f"Content-Type must be application/json (got {shown})")
            return
        length = _header(scope, b"content-length")
        if length is None:
            # A chunked body is counted by the SDK as it arrives; its 413 gets the limit stated here too.
            await self.app(scope, receive, _Stating413(send, self._too_large("over the limit")))
            return
        if length.isdigit() and int(length) > self.max_body_bytes:
            await _refuse(send, 413, -32600, self._too_large(f"{int(length)} bytes"))
            return
        await self.app(scope, receive, send)

    def _too_large(self, size: str) -> str:
        return (
            f"request body is {size}; the limit is {self.max_body_bytes} bytes ({self.max_body_bytes / 1048576:g} MiB)"
        )


class _Stating413:
    def __init__(self, send: Send, message: str) -> None:
        self.send = send
        self.message = message
        self.replaced = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 413:
            self.replaced = True
            await _refuse(self.send, 413, -32600, self.message)
        elif not self.replaced:
            await self.send(message)


class CallsInFlight:
    """Counts HTTP requests being answered, except the GET streams that stay open by design."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.count = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] == "GET":
            await self.app(scope, receive, send)
            return
        self.count += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.count -= 1

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is being answered, at most `timeout` seconds; whether that happened.

        Polls: it runs once, at shutdown, and keeps the per-request cost at two additions.
        """
        with anyio.move_on_after(timeout):
            while self.count:
                await anyio.sleep(0.02)
        return self.count == 0


_SESSION_ID = re.compile(rb"session_id=([0-9a-f]{32})")


class SseProjectPath:
    """`/sse?project_path=P` chooses P for every message of that SSE connection.

    An SSE client (the TypeScript SDK's, the MCP Inspector) puts its query string on the GET that
    opens the stream, and posts its messages to the `messages_path?session_id=...` URL the server
    announces in the stream's first event, which it cannot change. So the GET's `project_path` is
    remembered under the session id read from that event, for as long as the stream is open, and a
    message of that session that names none is handed on as if its URL named it: the workspace gate
    and the resolver see a query, as on /mcp. It is bound to the connection and to the credential
    that opened it (the Authorization header, so its principal): a message with another credential,
    or of another session, is given nothing (the SDK refuses such a message anyway).
    """

    def __init__(self, app: ASGIApp, *, stream_path: str, messages_path: str, query: str) -> None:
        self.app = app
        self.stream_path = stream_path
        self.messages_path = messages_path
        self.query = query
        self.sessions: dict[str, tuple[str, bytes | None]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if scope["method"] == "GET" and scope["path"] == self.stream_path:
                chosen = self._chosen(scope)
                if chosen:
                    await self._stream(scope, receive, send, chosen)
                    return
            elif scope["method"] == "POST" and scope["path"] == self.messages_path and self.sessions:
                scope = self._with_remembered(scope)
        await self.app(scope, receive, send)

    def _chosen(self, scope: Scope) -> str | None:
        pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        return next((value for key, value in pairs if key == self.query and value), None)

    async def _stream(self, scope: Scope, receive: Receive, send: Send, chosen: str) -> None:
        credential = _header(scope, b"authorization")
        session: str | None = None

        async def announced(message: Message) -> None:
            nonlocal session
            if session is None and message["type"] == "http.response.body":
                found = _SESSION_ID.search(message.get("body", b""))
                if found:
                    session = found.group(1).decode()
                    self.sessions[session] = (chosen, credential)
            await send(message)

        try:
            await self.app(scope, receive, announced)
        finally:
            if session is not None:
                self.sessions.pop(session, None)

    def _with_remembered(self, scope: Scope) -> Scope:
        pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if any(key == self.query for key, _ in pairs):
            return scope  # the message's own URL names one
        session = next((value for key, value in pairs if key == "session_id"), None)
        remembered = self.sessions.get(session) if session else None
        if remembered is None or remembered[1] != _header(scope, b"authorization"):
            return scope
        query = urlencode([*pairs, (self.query, remembered[0])]).encode("latin-1")
        return {**scope, "query_string": query}
