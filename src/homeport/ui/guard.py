"""Who is looking at the dashboard, and whether a request may come from where it says it does.

- Host and Origin are held to the values `/mcp` accepts (`http_exposure.transport_security`), so a
  DNS-rebinding page can name neither.
- Every form carries a token derived from a per-process secret and the caller's credential; a
  POST without it, or with another one, changes nothing.
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
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from starlette.requests import HTTPConnection, Request

from homeport.core.settings import ServeSettings
from homeport.server.http_exposure import transport_security
from homeport.server.owner_token import ForwarderToken
from homeport.server.request import LOCAL_PRINCIPAL

__all__ = ["COOKIE", "DashboardGuard", "Viewer"]

COOKIE = "homeport_ui"


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
        self.origins = list(security.allowed_origins)
        self.auth = settings.auth
        self.bearer = bearer if settings.auth else None
        self._secret = secrets.token_bytes(32)

    def host_allowed(self, request: Request) -> bool:
        return _matches(request.headers.get("host"), self.hosts)

    def origin_allowed(self, request: Request) -> bool:
        """No Origin (a same-origin GET) passes; any other must be one `/mcp` accepts ("null" never is)."""
        origin = request.headers.get("origin")
        return origin is None or _matches(origin, self.origins)

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

    def form_token(self, credential: str) -> str:
        return hmac.new(self._secret, credential.encode(), hashlib.sha256).hexdigest()

    def form_token_valid(self, credential: str, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(self.form_token(credential), token)


def _matches(value: str | None, allowed: list[str]) -> bool:
    # The same matching as the SDK's check on /mcp: exact, or `name:*` for any port.
    if not value:
        return False
    return any(value == a or (a.endswith(":*") and value.startswith(a[:-1])) for a in allowed)
