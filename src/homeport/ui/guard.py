"""Who is looking at the dashboard, and whether a request may come from where it says it does.

- Host is held to the values `/mcp` accepts (`http_exposure.transport_security`), so a
  DNS-rebinding page cannot name it. An Origin, when a browser sends one, must be this server's own
  origin exactly (the scheme and the Host the request came to, or a `--public-url`): a page on
  another port of the same machine is another origin, and cookies, which ignore ports, cannot
  make up for that.
- Every form carries a token derived from a per-process secret, the browser's pre-session id (an
  HttpOnly, SameSite=Strict cookie set with the first page, a new one at each login) and the
  caller's credential; a POST without it, or with another browser's, changes nothing. So a login
  form fetched by someone else (any local process can fetch one) does not work in this browser.
- With `--auth`, a person logs in with a bearer token: one from `homeport tokens add AGENT`, or
  under `--auth jwt` a JWT from the issuer. It is kept in an HttpOnly, SameSite=Strict cookie
  scoped to /ui and checked on every request by the verifier `/mcp` uses (the same instance, so
  the same JWKS, issuer and audience, and a revoked Homeport token stops working at once). The
  principal, its agent and its claims (a JWT's groups) are exactly those of an MCP client
  presenting the same token, so the access rules decide the same way.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from homeport.core.settings import ServeSettings
from homeport.server.http_exposure import parse_public_url, transport_security
from homeport.server.owner_token import ForwarderToken
from homeport.server.request import LOCAL_PRINCIPAL

__all__ = ["BROWSER_COOKIE", "COOKIE", "DashboardGuard", "Viewer"]

COOKIE = "homeport_ui"
# The browser's pre-session id: what every form token is bound to, before and after a login.
BROWSER_COOKIE = "homeport_ui_browser"
_BROWSER_ID = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Viewer:
    """The principal the dashboard's tool calls run as (with its agent and its token's claims), and
    the credential its form tokens are bound to."""

    principal: str
    credential: str
    agent: str | None = None
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False)


class DashboardGuard:
    def __init__(self, settings: ServeSettings, bearer: BearerAuthBackend | None = None) -> None:
        security = transport_security(settings)
        self.hosts = list(security.allowed_hosts)
        # Behind a proxy the browser's origin is the public one, not the scheme the request arrived with.
        self.public_origins = frozenset(parse_public_url(u).origin for u in settings.public_urls)
        self.auth = settings.auth
        self.bearer = bearer if settings.auth else None
        self._secret = secrets.token_bytes(32)

    def host_allowed(self, request: Request) -> bool:
        return _matches(request.headers.get("host"), self.hosts)

    def origin_allowed(self, request: Request) -> bool:
        """No Origin (a same-origin GET, a client that is not a browser) passes; any other must be this
        server's own origin: the scheme and Host the request came to, or a --public-url ("null" never is).
        """
        origin = request.headers.get("origin")
        if origin is None:
            return True
        host = request.headers.get("host")
        return bool(host) and (origin == f"{request.url.scheme}://{host}" or origin in self.public_origins)

    async def viewer(self, request: Request) -> Viewer | None:
        """Who is asking; None when auth is on and the cookie holds no valid token."""
        if not self.auth:
            return Viewer(LOCAL_PRINCIPAL, "local")
        token = request.cookies.get(COOKIE)
        return await self.verify(token) if token else None

    async def verify(self, token: str) -> Viewer | None:
        """Who a bearer token names, checked exactly as `/mcp` checks an Authorization header; None
        when that check refuses it (or there is none: auth on without it refuses everyone)."""
        if self.bearer is None or not token.isprintable() or not token.isascii():
            return None
        scope = {"type": "http", "headers": [(b"authorization", f"Bearer {token}".encode())]}
        checked = await self.bearer.authenticate(HTTPConnection(scope))
        if checked is None or not isinstance(checked[1], AuthenticatedUser):
            return None
        access = checked[1].access_token
        if isinstance(access, ForwarderToken):
            # The owner's own token, from the user's other instances: as on /mcp without an agent header.
            return Viewer(LOCAL_PRINCIPAL, token)
        principal = access.subject or access.client_id
        return Viewer(principal, token, agent=principal, claims=dict(access.claims or {}))

    def browser_id(self, request: HTTPConnection) -> str | None:
        """The pre-session id the browser's cookie holds, or None (no cookie, or not one this server mints)."""
        value = request.cookies.get(BROWSER_COOKIE)
        return value if value is not None and _BROWSER_ID.fullmatch(value) else None

    @staticmethod
    def new_browser_id() -> str:
        return secrets.token_urlsafe(32)

    @staticmethod
    def give_browser_id(response: Response, request: HTTPConnection, value: str) -> None:
        """Set pre-session id `value` in `response`'s cookie (scoped to /ui, out of reach of scripts)."""
        response.set_cookie(
            BROWSER_COOKIE,
            value,
            httponly=True,
            samesite="strict",
            path="/ui",
            secure=request.url.scheme == "https",
        )

    def form_token(self, browser: str, credential: str) -> str:
        message = f"{browser}\n{credential}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def form_token_valid(self, browser: str | None, credential: str, token: str | None) -> bool:
        """Whether `token` is the one this server put in a form for this browser and credential."""
        if browser is None or token is None:
            return False
        return hmac.compare_digest(self.form_token(browser, credential), token)


def _matches(value: str | None, allowed: list[str]) -> bool:
    # The same matching as the SDK's check on /mcp: exact, or `name:*` for any port.
    if not value:
        return False
    return any(value == a or (a.endswith(":*") and value.startswith(a[:-1])) for a in allowed)
