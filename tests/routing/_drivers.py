"""Real MCP clients for the routing tests: in memory (the stdio server's code) and Streamable HTTP on uvicorn.

Each driver answers `call(tool, arguments, header=..., query=...)` with the tool's result. Over
Streamable HTTP the driver sets the `X-Workspace-Id` header and `?project_path=` of each call's
request from a hook, so one client can vary them call by call, as a client may. An SSE client
cannot: its query string is on the GET /sse URL that opens the connection, and it posts its
messages to the URL the server announces. So the SSE driver puts a call's `project_path` on the
GET /sse URL, and a call with another one opens another connection, as a real client would, and
repeats there the `use_workspace` that set the session default the model expects to carry over.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import uvicorn
from mcp import Client, MCPError, types
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import FileUrl

from homeport.core import ServeSettings, build_runtime
from homeport.server import build_http_app, build_server


def roots_callback(paths: Sequence[Path] | None) -> Any:
    if paths is None:
        return None

    async def list_roots(_ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl(p.as_uri())) for p in paths])

    return list_roots


class ThreadedUvicorn:
    """uvicorn serving `app` on 127.0.0.1 from a thread of this process (a real socket, real HTTP)."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> ThreadedUvicorn:
        self.thread.start()
        started = threading.Event()
        for _ in range(1000):
            if self.server.started:
                started.set()
                break
            self.thread.join(0.01)
        assert started.is_set(), "uvicorn did not start"
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@dataclass
class HttpRefusal:
    """A call whose HTTP request was refused before the MCP layer (the server's JSON-RPC error body)."""

    message: str
    is_error: bool = True


class Driver:
    def __init__(self, client: Client | None, per_call: dict[str, str | None] | None = None) -> None:
        self.client = client
        self.per_call = per_call

    async def call(
        self, tool: str, arguments: dict[str, Any], *, header: str | None = None, query: str | None = None
    ) -> types.CallToolResult | HttpRefusal:
        if self.per_call is not None:
            self.per_call["header"], self.per_call["query"] = header, query
        assert self.client is not None
        try:
            return await self.client.call_tool(tool, arguments)
        except MCPError as exc:  # the SDK surfaces the JSON-RPC error of a non-2xx answer
            return HttpRefusal(exc.error.message)


class SseDriver(Driver):
    """An SSE client per `project_path`: the query is on the URL of the GET that opens the connection."""

    def __init__(self, open_client: Any, per_call: dict[str, str | None]) -> None:
        super().__init__(None, per_call)
        self.open_client = open_client  # query -> async context manager of a Client
        self.stack = contextlib.AsyncExitStack()
        self.query: str | None = None
        self.session_default: dict[str, Any] | None = None  # the arguments of the use_workspace that set it

    async def call(
        self, tool: str, arguments: dict[str, Any], *, header: str | None = None, query: str | None = None
    ) -> types.CallToolResult | HttpRefusal:
        if self.client is None or query != self.query:
            await self.stack.aclose()
            self.client = await self.stack.enter_async_context(self.open_client(query))
            self.query = query
            if self.session_default is not None:
                replayed = await super().call("use_workspace", self.session_default)
                assert isinstance(replayed, types.CallToolResult) and not replayed.is_error, replayed
        result = await super().call(tool, arguments, header=header)
        bound = isinstance(result, types.CallToolResult) and (result.structured_content or {}).get("bound_to_session")
        if tool == "use_workspace" and bound:
            self.session_default = dict(arguments)
        return result

    async def aclose(self) -> None:
        await self.stack.aclose()


@contextlib.asynccontextmanager
async def connect(
    settings: ServeSettings,
    *,
    era: str,
    roots: Sequence[Path] | None,
    wire: str = "streamable",
    token: str | None = None,
) -> AsyncIterator[Driver]:
    """A client of a server built from `settings`, in memory for stdio and over real HTTP for http
    (Streamable HTTP at /mcp, or with `wire="sse"` the legacy HTTP+SSE transport at /sse), sending
    `token` as its bearer token."""
    runtime = build_runtime(settings)
    try:
        server = build_server(runtime)
        if settings.transport == "stdio":
            async with Client(server, mode=era, list_roots_callback=roots_callback(roots)) as client:  # type: ignore[arg-type]
                yield Driver(client)
            return
        per_call: dict[str, str | None] = {"header": None, "query": None}

        async def apply(request: httpx2.Request) -> None:
            if token is not None:
                request.headers["Authorization"] = f"Bearer {token}"
            # A real client sends the same headers on every request; this one varies them per call, so
            # only the call's own request carries them, never the connection's start-up (the initialized
            # notification, the GET stream), which may go out while the first call is made.
            if not _is_tool_call(request):
                return
            if per_call["header"] is not None:
                request.headers["X-Workspace-Id"] = per_call["header"]
            if per_call["query"] is not None and wire != "sse":  # an SSE client's is on its GET /sse
                request.url = request.url.copy_set_param("project_path", per_call["query"])

        with ThreadedUvicorn(build_http_app(server, runtime)) as http_server:
            base = f"http://127.0.0.1:{http_server.port}"
            if wire == "sse":

                def sse_http(
                    headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None
                ) -> httpx2.AsyncClient:
                    return httpx2.AsyncClient(
                        headers=headers, timeout=timeout, auth=auth, event_hooks={"request": [apply]}
                    )

                def sse_connection(query: str | None) -> Any:
                    url = f"{base}/sse" + ("" if query is None else f"?project_path={quote(query, safe='')}")
                    transport: Any = sse_client(url, httpx_client_factory=sse_http)
                    return Client(transport, mode=era, list_roots_callback=roots_callback(roots))  # type: ignore[arg-type]

                driver = SseDriver(sse_connection, per_call)
                try:
                    yield driver
                finally:
                    await driver.aclose()
                return
            async with (
                httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=60), event_hooks={"request": [apply]}) as http,
                Client(
                    streamable_http_client(f"{base}/mcp", http_client=http),  # type: ignore[arg-type]
                    mode=era,
                    list_roots_callback=roots_callback(roots),
                ) as client,
            ):
                yield Driver(client, per_call)
    finally:
        runtime.close()


def _is_tool_call(request: httpx2.Request) -> bool:
    if request.method != "POST":
        return False
    try:
        return bool(json.loads(request.content).get("method") == "tools/call")
    except (ValueError, AttributeError):
        return False
