"""JWT bearer tokens (`serve --http --auth jwt`): signed by an issuer's keys, meant for this server.

A token is accepted only when its signature verifies with a key from the issuer's JWKS (RS256 or
ES256; the key is picked by the token's `kid`), it has not expired (`exp` is required), its `iss` is
the configured issuer, its `aud` holds this server's resource URL (RFC 8707: a token minted for
another service is not accepted here) and its `sub` can name a principal (not empty, not `local`,
not a pattern of the access rules: `auth.subject_problem`). The SDK's bearer middleware calls `verify_token`; a
refused token is a 401 with the resource metadata's URL, as for Homeport's own tokens.

PyJWT does the verifying (the MCP SDK already depends on it); its `PyJWKClient` fetches the key
set and caches it, fetching again for a `kid` it does not know (a rotated key).
"""

from __future__ import annotations

import logging
from typing import Any

import anyio.to_thread
import jwt
from mcp.server.auth.provider import AccessToken, TokenVerifier

from homeport.server.auth import subject_problem

__all__ = ["JWT_ALGORITHMS", "JwtVerifier"]

JWT_ALGORITHMS: tuple[str, ...] = ("RS256", "ES256")

log = logging.getLogger("homeport.auth")


class JwtVerifier(TokenVerifier):
    """Verifies JWTs against a JWKS URL, an issuer and an audience; any failure refuses the token."""

    def __init__(self, jwks_url: str, *, issuer: str, audience: str, leeway_seconds: float = 30.0) -> None:
        self.issuer = issuer
        self.audience = audience
        self.leeway_seconds = leeway_seconds
        # Keys are kept for 5 minutes; an unknown kid fetches the set again (PyJWKClient does both).
        self._keys = jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=300, timeout=5)

    async def verify_token(self, token: str) -> AccessToken | None:
        return await anyio.to_thread.run_sync(self.verify, token)

    def verify(self, token: str) -> AccessToken | None:
        """The token's AccessToken (subject = `sub`, claims = the payload), or None when it is refused."""
        try:
            key = self._keys.get_signing_key_from_jwt(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=list(JWT_ALGORITHMS),
                issuer=self.issuer,
                audience=self.audience,
                leeway=self.leeway_seconds,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as exc:
            # Debug only: a stream of bad tokens must not flood the log; the client gets its 401.
            log.debug("bearer JWT refused: %s", exc)
            return None
        subject = claims["sub"]
        problem = subject_problem(subject)
        if problem is not None:
            # An empty `sub` would have run as `local`, the unauthenticated local user.
            log.debug("bearer JWT refused: its sub %r cannot name a principal: %s", subject, problem)
            return None
        scope = claims.get("scope") or claims.get("scp") or ""
        scopes = scope.split() if isinstance(scope, str) else [str(s) for s in scope]
        return AccessToken(
            token=token,
            client_id=str(claims.get("azp") or claims.get("client_id") or subject),
            scopes=scopes,
            expires_at=int(claims["exp"]),
            resource=self.audience,
            subject=subject,
            claims=claims,
        )
