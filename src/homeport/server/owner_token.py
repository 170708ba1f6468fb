"""How the user's own instances reach an owner started with --auth.

An owner started with `--own --auth` writes a random token to a file only its user can read
(`InstanceRegistry.mint_owner_token`) and names that file in its registry entry (the headers named
below are in `server.forward_headers`, which the shell loads without the MCP SDK). A front end
(stdio, HTTP, the shell) that forwards a call there presents the token, and names the calling
agent in `X-Homeport-Agent` and, when the front end verified a JWT, its claims (groups and the
rest) in `X-Homeport-Claims`, so that group and claim rules decide the same way at both ends. The
owner accepts these headers only with its own token: an agent's token that sends them is still that
agent, with its own claims. The owner then checks the named agent's access
as for any call, so forwarding never widens what an agent may reach; the token only proves that
the caller runs as the owner's user, who could open the same stores directly.
"""

from __future__ import annotations

import hmac

from mcp.server.auth.provider import AccessToken, TokenVerifier

__all__ = ["ForwarderToken", "OwnerTokenVerifier"]


class ForwarderToken(AccessToken):
    """The owner's own token: the caller is another Homeport instance of this user."""


class OwnerTokenVerifier(TokenVerifier):
    """Accept the owner's token (as a `ForwarderToken`), and every other token as `inner` decides."""

    def __init__(self, inner: TokenVerifier, owner_token: str, *, resource: str | None = None) -> None:
        self.inner = inner
        self._owner_token = owner_token.encode()
        self.resource = resource  # where tokens must name this server (JWTs), so must the owner's own

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._owner_token):
            return ForwarderToken(token=token, client_id="homeport-instance", scopes=[], resource=self.resource)
        return await self.inner.verify_token(token)
