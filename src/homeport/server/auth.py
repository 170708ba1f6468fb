"""Bearer tokens for HTTP: a token from `homeport tokens add AGENT` authenticates as that agent
(`--auth tokens`; JWTs from an issuer are `homeport.server.jwt_auth`).

Homeport is an OAuth protected resource without an authorization server of its own (tokens are
minted on the command line), so its resource metadata (RFC 9728) lists no authorization server:
it advertises only what exists.
"""

from __future__ import annotations

import logging

import anyio.to_thread
from mcp.server.auth.provider import AccessToken, TokenVerifier
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from homeport.errors import ConfigError
from homeport.files.tokens import TokenStore
from homeport.server.request import LOCAL_PRINCIPAL

__all__ = ["METADATA_PATH", "TokenStoreVerifier", "resource_metadata_routes", "subject_problem"]

METADATA_PATH = "/.well-known/oauth-protected-resource"

log = logging.getLogger("homeport.auth")


def subject_problem(subject: object) -> str | None:
    """Why a verified token's subject cannot name a principal, or None when it can.

    Refused: no text, or text with surrounding spaces or control characters (an empty `sub` became
    `local`); `local`, the unauthenticated local user's name, which the owner's forwarded calls
    also take; and what the access rules' `who` reads as a pattern (`*`, `group:...`, `claim:...`),
    so a subject can never pass for a group or a claim.
    """
    if not isinstance(subject, str) or not subject.strip():
        return "it is empty"
    if subject != subject.strip() or not subject.isprintable():
        return "it has surrounding spaces or control characters"
    if subject == LOCAL_PRINCIPAL:
        return f"{LOCAL_PRINCIPAL!r} is the name of the local user when no token is required"
    if subject == "*" or subject.startswith(("group:", "claim:")):
        return "the access rules read it as a pattern ('*', 'group:', 'claim:'), not a name"
    return None


class TokenStoreVerifier(TokenVerifier):
    """Verifies against the token file on every request; a file that cannot be read refuses every token."""

    def __init__(self, tokens: TokenStore) -> None:
        self.tokens = tokens
        self._failing: str | None = None

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            agent = await anyio.to_thread.run_sync(self.tokens.verify, token)
        except ConfigError as exc:
            # Fail closed (401), and say why once rather than on every request.
            if exc.message != self._failing:
                log.error("refusing every bearer token: %s", exc.message)
                self._failing = exc.message
            return None
        if self._failing is not None:
            log.warning("token file %s is readable again; bearer tokens are accepted", self.tokens.path)
            self._failing = None
        if agent is None:
            return None
        problem = subject_problem(agent)
        if problem is not None:
            log.warning(
                "refusing a token of agent %r in %s: %s; mint one for another agent", agent, self.tokens.path, problem
            )
            return None
        return AccessToken(token=token, client_id=agent, scopes=[], subject=agent)


def resource_metadata_routes(resource_url: str, *, authorization_servers: tuple[str, ...] = ()) -> list[Route]:
    """RFC 9728 metadata at the path-specific and the root well-known URI; authorization servers only
    when there is one (the JWT issuer)."""
    body: dict[str, object] = {"resource": resource_url, "bearer_methods_supported": ["header"]}
    if authorization_servers:
        body["authorization_servers"] = list(authorization_servers)
    body["resource_name"] = "homeport"

    async def metadata(_request: Request) -> JSONResponse:
        return JSONResponse(body, headers={"Cache-Control": "public, max-age=3600"})

    return [Route(f"{METADATA_PATH}/mcp", metadata, methods=["GET"]), Route(METADATA_PATH, metadata, methods=["GET"])]
