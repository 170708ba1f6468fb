"""The headers a forwarded call carries to an owner started with --auth, and their values.

The owner honours them only with its own token (`server.owner_token`). Kept apart from the token
verifier so that the shell, which forwards its commands to the daemon, loads none of the MCP SDK.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from homeport.errors import ConfigError, InvalidArgumentError
from homeport.files.directory import check_id

__all__ = ["AGENT_HEADER", "CLAIMS_HEADER", "FORWARDED_HEADER", "claims_header", "forwarded_agent", "forwarded_claims"]

# Set on every forwarded call: the owner serves it and never forwards it again (one hop at most).
FORWARDED_HEADER = "x-homeport-forwarded-by"
AGENT_HEADER = "x-homeport-agent"
CLAIMS_HEADER = "x-homeport-claims"


def forwarded_agent(value: str | None) -> str | None:
    """The agent a forwarding instance names, checked as an agent id (None: it named none).

    Raises:
        InvalidArgumentError: the header is not an agent id.
    """
    if value is None or value == "":
        return None
    try:
        return check_id(value, "agent")
    except ConfigError:
        raise InvalidArgumentError(f"{AGENT_HEADER}: {value!r} is not an agent id") from None


def claims_header(claims: Mapping[str, Any]) -> str | None:
    """The value of `X-Homeport-Claims` for a caller's verified claims (None: it has none)."""
    if not claims:
        return None
    return json.dumps(dict(claims), separators=(",", ":"), sort_keys=True, default=str)


def forwarded_claims(value: str | None) -> dict[str, Any]:
    """The claims a forwarding instance verified for its caller (empty: it sent none).

    Raises:
        InvalidArgumentError: the header is not a JSON object.
    """
    if value is None or value == "":
        return {}
    try:
        claims = json.loads(value)
    except ValueError:
        claims = None
    if not isinstance(claims, dict):
        raise InvalidArgumentError(f"{CLAIMS_HEADER}: not a JSON object of claims")
    return claims
