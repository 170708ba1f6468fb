"""Build the MCP server and the HTTP application for one process."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse

from homeport import __version__
from homeport.server.request import forget_roots
from homeport.server.runtime import Runtime
from homeport.server.tools_memory import register_memory_tools
from homeport.server.tools_workspace import register_workspace_tools

__all__ = ["INSTRUCTIONS", "build_http_app", "build_server"]

INSTRUCTIONS = (
    "Homeport keeps this project's memory: product and active context, decisions, progress, custom data "
    "(ProjectGlossary is the glossary), searchable. Every tool takes an optional `workspace` (the project's "
    "absolute path, or a handle from use_workspace) and every result says which workspace it used; if unsure, "
    "call where_am_i first. Start a session with get_active_context and get_decisions."
)


async def _roots_changed(ctx: Any, call_next: Any) -> Any:
    if ctx.request_id is None and ctx.method == "notifications/roots/list_changed":
        forget_roots(ctx)
    return await call_next(ctx)


def build_server(runtime: Runtime) -> MCPServer:
    mcp = MCPServer("homeport", version=__version__, instructions=INSTRUCTIONS, middleware=[_roots_changed],
                    log_level="WARNING")
    register_workspace_tools(mcp, runtime)
    register_memory_tools(mcp, runtime)
    return mcp


def build_http_app(mcp: MCPServer, runtime: Runtime) -> Starlette:
    """Streamable HTTP at /mcp and health at /healthz, with Host and Origin checked on /mcp."""
    host = runtime.settings.host
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        hosts.append(f"{host}:*")
        origins.append(f"http://{host}:*")

    @mcp.custom_route("/healthz", methods=["GET"])
    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__, "open_stores": len(runtime.stores),
                             "allowed_roots": [str(p) for p in runtime.resolver.settings.guard.allow_roots]})

    return mcp.streamable_http_app(
        streamable_http_path="/mcp",
        host=host,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins),
    )
