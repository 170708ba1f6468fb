"""Who is looking at the dashboard, and whether a request may come from where it says it does.

- Host and Origin are held to the values `/mcp` accepts (`http_exposure.transport_security`), so a
  DNS-rebinding page can name neither.
- Every form carries a token derived from a per-process secret and the caller's credential; a
  POST without it, or with another one, changes nothing.
- With `--auth`, a person logs in with a bearer token from `homeport tokens add AGENT`; it is kept
  in an HttpOnly, SameSite=Strict cookie scoped to /ui and checked against the token file on every
  request, so a revoked token stops working at once. The principal is the token's agent, exactly
  as for an MCP client presenting the same token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

import anyio.to_thread
from starlette.requests import Request

from homeport.errors import ConfigError
from homeport.files.tokens import TokenStore
from homeport.server.http_exposure import transport_security
from homeport.server.settings import ServeSettings

__all__ = ["COOKIE", "DashboardGuard", "Viewer"]

COOKIE = "homeport_ui"


@dataclass(frozen=True)
class Viewer:
    """The principal the dashboard's tool calls run as, and the credential its form tokens are bound to."""

    principal: str
    credential: str


class DashboardGuard:
    def __init__(self, settings: ServeSettings) -> None:
        security = transport_security(settings)
        self.hosts = list(security.allowed_hosts)
        self.origins = list(security.allowed_origins)
        self.auth = settings.auth
        self.tokens = TokenStore(settings.tokens_file) if settings.auth and settings.tokens_file else None
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
            return Viewer("local", "local")
        token = request.cookies.get(COOKIE)
        agent = await self.verify(token) if token else None
        return Viewer(agent, token) if agent and token else None

    async def verify(self, token: str) -> str | None:
        """The agent a bearer token names, or None (unknown token, or a token file that cannot be read)."""
        if self.tokens is None:
            return None
        try:
            return await anyio.to_thread.run_sync(self.tokens.verify, token)
        except ConfigError:
            return None

    def form_token(self, credential: str) -> str:
        return hmac.new(self._secret, credential.encode(), hashlib.sha256).hexdigest()

    def form_token_valid(self, credential: str, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(self.form_token(credential), token)


def _matches(value: str | None, allowed: list[str]) -> bool:
    # The same matching as the SDK's check on /mcp: exact, or `name:*` for any port.
    if not value:
        return False
    return any(value == a or (a.endswith(":*") and value.startswith(a[:-1])) for a in allowed)
