"""Build the MCP server and the HTTP application for one process."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse

from homeport import __version__
from homeport.errors import ConfigError
from homeport.server import tools as _tools  # noqa: F401  (declares every tool in CATALOG)
from homeport.server.catalog import CATALOG
from homeport.server.mcp_tools import build_tools
from homeport.server.request import forget_roots
from homeport.server.runtime import Runtime

__all__ = ["INSTRUCTIONS", "TOOL_GROUPS", "build_http_app", "build_server", "parse_tool_groups"]

# Each group's tools cost the agent context on every turn; `--tools` exposes only the named groups.
TOOL_GROUPS: tuple[str, ...] = CATALOG.groups()

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
    return MCPServer(
        "homeport",
        version=__version__,
        instructions=INSTRUCTIONS,
        middleware=[_roots_changed],
        log_level="WARNING",
        tools=build_tools(CATALOG.in_groups(runtime.settings.tool_groups), runtime),
        **_auth_options(runtime),
    )


def _auth_options(runtime: Runtime) -> dict[str, Any]:
    """Bearer tokens from `homeport tokens add` on every HTTP request, when --auth is on."""
    settings = runtime.settings
    if not settings.auth:
        return {}
    if settings.tokens_file is None:
        raise ConfigError("--auth needs a data directory for its tokens; pass --data-dir")
    from mcp.server.auth.settings import AuthSettings
    from pydantic import AnyHttpUrl

    from homeport.files.tokens import TokenStore
    from homeport.server.auth import TokenStoreVerifier

    tokens = TokenStore(settings.tokens_file)
    tokens.check()  # a broken token file stops the start here, with one clear line
    base = f"http://{'[' + settings.host + ']' if ':' in settings.host else settings.host}:{settings.port}"
    return {
        "token_verifier": TokenStoreVerifier(tokens),
        "auth": AuthSettings(
            issuer_url=AnyHttpUrl(base), resource_server_url=AnyHttpUrl(f"{base}/mcp"), validate_token_resource=False
        ),
    }


def parse_tool_groups(spec: str | Iterable[str] | None) -> tuple[str, ...]:
    """`"memory,workspace"` -> the groups in a stable order; None or "all" -> every group.

    Raises:
        ConfigError: an unknown group name.
    """
    if spec is None or spec == "all":
        return tuple(TOOL_GROUPS)
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    unknown = sorted(set(names) - set(TOOL_GROUPS))
    if unknown or not names:
        raise ConfigError(
            f"unknown tool group(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(TOOL_GROUPS)} or all"
        )
    return tuple(g for g in TOOL_GROUPS if g in names)


def build_http_app(mcp: MCPServer, runtime: Runtime) -> Starlette:
    """Streamable HTTP at /mcp and health at /healthz, with Host and Origin checked on /mcp."""
    host = runtime.settings.host
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        hosts.append(f"{host}:*")
        origins.append(f"http://{host}:*")

    @mcp.custom_route("/healthz", methods=["GET"])  # type: ignore[untyped-decorator]
    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "status": "ok",
                "version": __version__,
                "pid": os.getpid(),  # the instance registry's liveness proof (a reused pid cannot fake it)
                "open_stores": len(runtime.stores),
                "allowed_roots": [str(p) for p in runtime.resolver.settings.guard.allow_roots],
            }
        )

    return mcp.streamable_http_app(
        streamable_http_path="/mcp",
        host=host,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
        ),
    )
