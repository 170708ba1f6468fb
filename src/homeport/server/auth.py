"""Bearer tokens for HTTP: a token from `homeport tokens add AGENT` authenticates as that agent."""

from __future__ import annotations

import logging

import anyio.to_thread
from mcp.server.auth.provider import AccessToken, TokenVerifier

from homeport.errors import ConfigError
from homeport.files.tokens import TokenStore

__all__ = ["TokenStoreVerifier"]

logger = logging.getLogger(__name__)


class TokenStoreVerifier(TokenVerifier):
    def __init__(self, tokens: TokenStore) -> None:
        self.tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            agent = await anyio.to_thread.run_sync(self.tokens.verify, token)
        except ConfigError as exc:
            # Fail closed: a token file broken after start verifies nobody (401), and says why in the log.
            logger.error("refusing every token: %s", exc.message)
            return None
        if agent is None:
            return None
        return AccessToken(token=token, client_id=agent, scopes=[], subject=agent)
