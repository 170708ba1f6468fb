"""Build the MCP server and the HTTP application for one process."""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import TokenVerifier
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, RequestStateSecurity
from mcp.server.mcpserver.tools import Tool
from mcp.server.request_state import AESGCMRequestStateCodec
from mcp.types import CallToolResult, InputRequiredResult, ListToolsResult, PaginatedRequestParams
from mcp.types import Tool as MCPTool
from mcp_types.version import is_version_at_least
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from homeport import __version__
from homeport.core import tools as _tools  # noqa: F401  (declares every tool in CATALOG)
from homeport.core.catalog import CATALOG, COMPAT_GROUPS, DASHBOARD, unknown_tool
from homeport.core.runtime import Runtime
from homeport.core.settings import ServeSettings
from homeport.errors import ConfigError, UnknownToolError
from homeport.server.http_exposure import resource_base, transport_security
from homeport.server.http_middleware import CallsInFlight, RequestShape, SseProjectPath
from homeport.server.mcp_tools import build_tools, error_result
from homeport.server.request import (
    SSE_MESSAGES_PATH,
    SSE_PATH,
    STATELESS_ERA,
    WORKSPACE_QUERY,
    caller_of,
    forget_roots,
    lenient_roots_answer,
)
from homeport.server.tool_listing import ToolListing
from homeport.server.workspace_gate import WorkspaceGate
from homeport.workspace.handles import derive_key

__all__ = ["INSTRUCTIONS", "TOOL_GROUPS", "build_http_app", "build_server", "parse_tool_groups"]

# Each group's tools cost the agent context on every turn; `--tools` exposes only the named groups.
TOOL_GROUPS: tuple[str, ...] = CATALOG.groups()

INSTRUCTIONS = (
    "Homeport keeps this project's memory: product and active context, decisions, progress, custom data "
    "(ProjectGlossary is the glossary), searchable. Every tool takes an optional `workspace` (the project's "
    "absolute path, or a handle from use_workspace) and every result says which workspace it used; if unsure, "
    "call where_am_i first. Start a session with get_active_context and get_decisions."
)
# The SDK derives its AES key from this with HKDF; handles use another label of the same secret.
_REQUEST_STATE_KEY_LABEL = b"homeport/request-state/v1"


async def _roots_changed(ctx: Any, call_next: Any) -> Any:
    if ctx.request_id is None and ctx.method == "notifications/roots/list_changed":
        forget_roots(ctx)
    return await call_next(ctx)


class _Server(MCPServer):
    """The dashboard's tools are served but never listed: a dashboard whose workspace another
    instance owns (the daemon) sends its calls there like any other, and no client pays for their
    descriptions in its tool list. A call of a tool that is not served says what to call instead."""

    def __init__(self, *args: Any, groups: tuple[str, ...], tools: list[Tool], runtime: Runtime, **kwargs: Any) -> None:
        listed = [tool.name for tool in tools if CATALOG[tool.name].group != DASHBOARD]
        self.runtime = runtime
        self.listing = ToolListing(runtime.access, listed)
        super().__init__(*args, tools=tools, lifespan=_watching_listing, **kwargs)
        self._groups = groups  # the groups served, for the answer to an unknown tool
        self._served = {tool.name for tool in tools}
        if self.listing.filters:
            # The rules may change what a session is shown: 2025-era clients are told (tool_listing.py).
            lowlevel = self._lowlevel_server
            initialization = lowlevel.create_initialization_options
            lowlevel.create_initialization_options = functools.partial(  # type: ignore[method-assign]
                initialization, NotificationOptions(tools_changed=True)
            )

    async def list_tools(self) -> list[MCPTool]:
        return [tool for tool in await super().list_tools() if CATALOG[tool.name].group != DASHBOARD]

    async def _handle_list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        """The tools the caller's access rules let it call (all of them without rules)."""
        tools = await self.list_tools()
        if not self.listing.filters:
            return ListToolsResult(tools=tools)
        principal, claims = caller_of(self.runtime, get_access_token(), ctx.request)
        connection = ctx.session._connection  # no public accessor in mcp 2.3
        modern = is_version_at_least(ctx.protocol_version, STATELESS_ERA)
        told = connection if not modern and connection.has_standalone_channel else None
        return ListToolsResult(tools=self.listing.visible(tools, principal, claims, told))

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if name not in self._served:  # the SDK would answer "Unknown tool: NAME" and no more
            return error_result(UnknownToolError(unknown_tool(name, self._groups)))
        return await super().call_tool(name, arguments, context)


@contextlib.asynccontextmanager
async def _watching_listing(server: MCPServer) -> AsyncIterator[dict[str, Any]]:
    assert isinstance(server, _Server)
    async with server.listing.watching():
        yield {}


def build_server(runtime: Runtime) -> MCPServer:
    return _Server(
        "homeport",
        runtime=runtime,
        version=__version__,
        instructions=INSTRUCTIONS,
        middleware=[_roots_changed, lenient_roots_answer],
        log_level="WARNING",
        tools=build_tools(CATALOG.in_groups((*runtime.settings.tool_groups, DASHBOARD)), runtime),
        groups=runtime.settings.tool_groups,
        **_auth_options(runtime),
        **_request_state_options(runtime),
    )


def _request_state_options(runtime: Runtime) -> dict[str, Any]:
    """Over HTTP, the SDK's sealed request state (2026-07-28 multi-round-trip calls) under a key derived
    from the deployment's secret instead of one made up by this process, so that the retry of a call
    may land on any process of the deployment."""
    if runtime.settings.transport != "http":
        return {}
    return {"request_state_security": RequestStateSecurity(codec=_DeploymentCodec(runtime.secret))}


class _DeploymentCodec:
    """The SDK's AES-GCM request-state codec, keyed from the deployment's secret when first used (as
    handles are: a server that never needs the secret never reads or creates it)."""

    def __init__(self, secret: Callable[[], bytes]) -> None:
        self._secret = secret
        self._codec: AESGCMRequestStateCodec | None = None

    def _inner(self) -> AESGCMRequestStateCodec:
        if self._codec is None:
            self._codec = AESGCMRequestStateCodec([derive_key(self._secret(), _REQUEST_STATE_KEY_LABEL)])
        return self._codec

    def seal(self, payload: bytes) -> str:
        return self._inner().seal(payload)

    def unseal(self, token: str) -> bytes:
        return self._inner().unseal(token)


def _auth_options(runtime: Runtime) -> dict[str, Any]:
    """Bearer tokens on every HTTP request, when --auth is on: Homeport's own (`homeport tokens add`),
    or JWTs from an issuer (`--auth jwt`).

    Raises:
        ConfigError: no data directory, a token file that cannot be read, a JWT setting missing, or
            an access rules file that cannot be read (refused at start, not on every request).
    """
    settings = runtime.settings
    if not settings.auth:
        return {}
    from mcp.server.auth.settings import AuthSettings
    from pydantic import AnyHttpUrl

    if runtime.access.rules is not None:
        runtime.access.rules.get()  # a broken rules file stops the start here, with one clear line
    if settings.auth_method == "jwt":
        from homeport.server.jwt_auth import JwtVerifier

        if not settings.jwks_url or not settings.jwt_issuer:
            raise ConfigError("--auth jwt needs --jwks-url URL and --issuer ISSUER")
        audience = jwt_audience(settings)
        return {
            "token_verifier": _with_owner_token(
                settings, JwtVerifier(settings.jwks_url, issuer=settings.jwt_issuer, audience=audience), audience
            ),
            # The SDK refuses a verified token whose resource is not this server (PyJWT checked `aud`).
            "auth": AuthSettings(
                issuer_url=AnyHttpUrl(settings.jwt_issuer),
                resource_server_url=AnyHttpUrl(audience),
                validate_token_resource=True,
            ),
        }
    if settings.tokens_file is None:
        raise ConfigError("--auth needs a data directory for its tokens; pass --data-dir")
    from homeport.files.tokens import TokenStore
    from homeport.server.auth import TokenStoreVerifier

    tokens = TokenStore(settings.tokens_file)
    tokens.check()  # a broken token file stops the start here, with one clear line
    base = resource_base(settings, settings.port)
    return {
        "token_verifier": _with_owner_token(settings, TokenStoreVerifier(tokens), None),
        # The issuer is required by the SDK but advertised nowhere: build_http_app replaces the metadata.
        "auth": AuthSettings(
            issuer_url=AnyHttpUrl(base), resource_server_url=AnyHttpUrl(f"{base}/mcp"), validate_token_resource=False
        ),
    }


def _with_owner_token(settings: ServeSettings, verifier: TokenVerifier, resource: str | None) -> TokenVerifier:
    """`verifier`, accepting also this owner's own token (`--own --auth`) from the user's other instances."""
    if settings.owner_token_file is None:
        return verifier
    from homeport.server.owner_token import OwnerTokenVerifier

    token = settings.owner_token_file.read_text(encoding="utf-8").strip()
    return OwnerTokenVerifier(verifier, token, resource=resource)


def jwt_audience(settings: ServeSettings) -> str:
    """The audience a JWT must name: --audience, else this server's /mcp URL (its resource identifier).

    Raises:
        ConfigError: an --audience that is not an http(s) URL (MCP names a resource by its URL).
    """
    audience = settings.jwt_audience or f"{resource_base(settings, settings.port)}/mcp"
    if not audience.startswith(("http://", "https://")):
        raise ConfigError(
            f"--audience {audience!r} is not a URL; a token's audience names this server by the URL clients reach "
            "its /mcp at, e.g. https://mem.example.com/mcp"
        )
    return audience


def parse_tool_groups(spec: str | Iterable[str] | None) -> tuple[str, ...]:
    """`"memory,workspace"` -> the groups in a stable order; None or "all" -> every group.

    Raises:
        ConfigError: an unknown group name.
    """
    if spec is None or spec == "all":
        return tuple(TOOL_GROUPS)
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    if "all" in names:  # Homeport's own groups, with a compatibility group named beside them
        names = [*TOOL_GROUPS, *(n for n in names if n != "all")]
    choices = (*TOOL_GROUPS, *COMPAT_GROUPS)
    unknown = sorted(set(names) - set(choices))
    if unknown or not names:
        raise ConfigError(
            f"unknown tool group(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(choices)} or all"
        )
    if "conport" in names and "memory" in names:
        raise ConfigError(
            "the tool groups conport and memory cannot be served together: ConPort's tools take 17 of the memory "
            "group's names with other arguments; serve conport (ConPort's names) or memory (Homeport's), e.g. "
            "--tools workspace,conport"
        )
    return tuple(g for g in choices if g in names)


SSE_MESSAGES = SSE_MESSAGES_PATH.rstrip("/")  # a Mount's path has no trailing slash


def _streamed(route: BaseRoute) -> BaseRoute:
    """The SDK's SSE stream route, made to end cleanly.

    - Without auth it returns a `Response()` after its stream has ended, which Starlette then tries
      to send: a RuntimeError traceback at every disconnect. As an ASGI app the stream is the whole
      response and the return value is ignored.
    - A refused Host or Origin gets its 421/403, and then the SDK raises ValueError: a traceback in
      the log, and under load a reset connection instead of the answer. The answer stands; the
      error is dropped.
    """
    if not isinstance(route, Route) or route.path != SSE_PATH:
        return route
    endpoint = route.endpoint

    async def stream(scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            if inspect.isfunction(endpoint):
                await endpoint(Request(scope, receive, tracked))
            else:
                await endpoint(scope, receive, tracked)
        except ValueError:
            if not started:
                raise

    return Route(route.path, endpoint=_AsgiApp(stream), methods=["GET"])


def _gated(route: BaseRoute, runtime: Runtime) -> BaseRoute:
    """An MCP route (/mcp, /sse, /messages/) with its app behind the workspace gate; others as they are."""
    path = getattr(route, "path", None)
    if path not in ("/mcp", SSE_PATH, SSE_MESSAGES):
        return route
    if isinstance(route, Mount):
        return Mount(route.path, app=WorkspaceGate(route.app, runtime))
    assert isinstance(route, Route)
    return Route(route.path, endpoint=_AsgiApp(WorkspaceGate(route.app, runtime)), methods=route.methods)


class _AsgiApp:
    """Starlette treats a Route endpoint that is not a function as an ASGI app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


# Builds the dashboard's ASGI app from the runtime and the bearer check of /mcp (None without auth).
DashboardFactory = Callable[[Runtime, Any], ASGIApp]
# Builds more routes (DevDB's REST paths: `server.devdb_rest.devdb_routes`) the same way.
RoutesFactory = Callable[[Runtime, Any], list[BaseRoute]]


class _LazyDashboard:
    """The dashboard's app, built on its first request: its templates and Markdown renderer load when
    someone looks, not on every server start. The composition root hands the factory in, so that the
    binding never imports the dashboard."""

    def __init__(self, factory: DashboardFactory, runtime: Runtime, bearer: Any) -> None:
        self.factory = factory
        self.runtime = runtime
        self.bearer = bearer
        self.app: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is None:
            self.app = self.factory(self.runtime, self.bearer)
        await self.app(scope, receive, send)


def _bearer_check(mcp: MCPServer) -> Any:
    """The check `/mcp` makes of a bearer token (the SDK's backend around the server's own verifier,
    with its expiry and resource checks), for the dashboard's login cookie; None without auth."""
    auth, verifier = mcp.settings.auth, mcp._token_verifier
    if auth is None or verifier is None:
        return None
    from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend

    return BearerAuthBackend(
        verifier, resource_server_url=auth.resource_server_url if auth.validate_token_resource else None
    )


def _serve_owner_proof(mcp: MCPServer, secret: bytes) -> None:
    """GET /owner-proof?nonce=N: this owner's proof that it is the instance registered with `secret` (its
    pid, and an HMAC of the nonce, this connection's address and the pid; `registry.proof`). Front ends
    ask it on each new connection before they send anything of a call. Open to anyone: the answer is
    good for that nonce, this address and this pid only, and shows nothing of the secret."""
    from homeport.registry.proof import PROOF_PATH, owner_address, proof_for, proof_key, valid_nonce

    key, pid = proof_key(secret), os.getpid()

    @mcp.custom_route(PROOF_PATH, methods=["GET"])  # type: ignore[untyped-decorator]
    async def owner_proof(request: Request) -> JSONResponse:
        nonce = request.query_params.get("nonce", "")
        address = owner_address(request.scope.get("server"))
        if not valid_nonce(nonce) or address is None:
            return JSONResponse({"error": "send ?nonce= with 64 lowercase hex digits"}, status_code=400)
        return JSONResponse({"pid": pid, "proof": proof_for(key, nonce, address, pid)})


def build_http_app(
    mcp: MCPServer,
    runtime: Runtime,
    dashboard: DashboardFactory | None = None,
    rest: RoutesFactory | None = None,
) -> CallsInFlight:
    """Streamable HTTP at /mcp, the legacy HTTP+SSE transport at /sse (messages at /messages/), the
    dashboard at /ui and DevDB's REST paths (when the database tools are served) when the composition
    root hands their factories in, and health at /healthz, with Host and Origin checked on both
    transports, /ui and the REST paths, request shapes checked before the SDK sees them, and the
    requests in flight counted for shutdown."""
    settings = runtime.settings

    @mcp.custom_route("/healthz", methods=["GET"])  # type: ignore[untyped-decorator]
    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "status": "ok",
                "version": __version__,
                "pid": os.getpid(),  # the instance registry's liveness proof (a reused pid cannot fake it)
                "open_stores": len(runtime.stores),
                "started_at": runtime.counts.started_at,
                "calls": runtime.counts.calls,  # tool calls answered, and those that failed
                "errors": runtime.counts.errors,
            }
        )

    if settings.owner_token_file is not None:
        _serve_owner_proof(mcp, settings.owner_token_file.read_bytes())

    app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        host=settings.host,
        max_request_body_size=settings.max_body_bytes,
        transport_security=transport_security(settings),
    )
    # The 2024-11-05 HTTP+SSE transport beside it, for clients that speak only that: the same app,
    # so the same auth middleware; the SDK's SSE transport checks Host and Origin with the same
    # settings and binds each connection to the principal that opened it.
    sse = mcp.sse_app(
        sse_path=SSE_PATH,
        message_path=SSE_MESSAGES_PATH,
        host=settings.host,
        max_request_body_size=settings.max_body_bytes,
        transport_security=transport_security(settings),
    )
    sse_routes = [_streamed(r) for r in sse.router.routes if getattr(r, "path", None) in (SSE_PATH, SSE_MESSAGES)]
    app.router.routes = [*sse_routes, *app.router.routes]
    if settings.auth:
        # Behind the SDK's authentication (it runs first, as the app's middleware): 403 for a workspace
        # the request's header or query chooses and its principal may not use.
        app.router.routes = [_gated(r, runtime) for r in app.router.routes]
        from homeport.server.auth import METADATA_PATH, resource_metadata_routes

        # Homeport's own tokens: the SDK's metadata would name an authorization server that does not
        # exist (its metadata URL is a 404). JWTs: the issuer is the authorization server.
        routes = [r for r in app.router.routes if not getattr(r, "path", "").startswith(METADATA_PATH)]
        if settings.auth_method == "jwt":
            assert settings.jwt_issuer is not None
            metadata = resource_metadata_routes(jwt_audience(settings), authorization_servers=(settings.jwt_issuer,))
        else:
            metadata = resource_metadata_routes(f"{resource_base(settings, settings.port)}/mcp")
        app.router.routes = [*routes, *metadata]
    if dashboard is not None:
        app.router.routes.append(Mount("/ui", app=_LazyDashboard(dashboard, runtime, _bearer_check(mcp))))
    if rest is not None and {"db", "devdb"} & set(settings.tool_groups):
        # Behind the app's bearer middleware like every route; each checks Host, Origin and the token itself.
        app.router.routes.extend(rest(runtime, _bearer_check(mcp)))
    remembered = SseProjectPath(app, stream_path=SSE_PATH, messages_path=SSE_MESSAGES_PATH, query=WORKSPACE_QUERY)
    return CallsInFlight(
        RequestShape(remembered, paths=("/mcp", SSE_MESSAGES_PATH), max_body_bytes=settings.max_body_bytes)
    )
