"""Bearer tokens for HTTP: a token from `homeport tokens add AGENT` authenticates as that agent."""

from __future__ import annotations

import anyio.to_thread
from mcp.server.auth.provider import AccessToken, TokenVerifier

from homeport.files.tokens import TokenStore

__all__ = ["TokenStoreVerifier"]


class TokenStoreVerifier(TokenVerifier):
    def __init__(self, tokens: TokenStore) -> None:
        self.tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        agent = await anyio.to_thread.run_sync(self.tokens.verify, token)
        if agent is None:
            return None
        return AccessToken(token=token, client_id=agent, scopes=[], subject=agent)
