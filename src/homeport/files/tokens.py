"""Bearer tokens for agents that call over HTTP.

A token is ``hp_`` + 32 random bytes (URL-safe base64). It is shown once, by `TokenStore.add`;
the file keeps only its SHA-256, so a leaked token file gives no usable token. File format
(JSON, mode 0600, rewritten atomically under a lock)::

    {"version": 1, "tokens": [{"token_id": "tok_3f2a…", "agent_id": "ada",
                               "sha256": "…", "created_at": "2025-01-31T12:00:00Z"}]}

SHA-256 without a salt is enough here: the tokens are 256-bit random values, not passwords, so
there is nothing to guess. `verify` compares digests with `hmac.compare_digest` against every
entry, so its timing does not depend on which entry matched.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from homeport._trusted_files import UntrustedPathError, read_trusted_file
from homeport.errors import ConfigError
from homeport.files._atomic import locked, write_atomically
from homeport.files.directory import check_id

__all__ = ["TOKEN_PREFIX", "TokenStore"]

TOKEN_PREFIX = "hp_"
_FILE_MODE = 0o600
_FORMAT_VERSION = 1
_MAX_FILE_BYTES = 64 * 1024 * 1024  # a token is a ~200-byte entry: room for a very large team
# The local user's name when no token is required (homeport.server.request.LOCAL_PRINCIPAL; a test pins the two
# together): the server refuses a token whose agent has it on every request, so none is minted for it.
_LOCAL_USER = "local"


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokenStore:
    """The token file at `path`; created on the first `add`."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def add(self, agent_id: str) -> str:
        """Mint a token for `agent_id` and return it; it cannot be shown again.

        Raises:
            ConfigError: `agent_id` is not a valid id, or the file is unreadable or unwritable.
        """
        check_id(agent_id, "agent")
        if agent_id == _LOCAL_USER:
            raise ConfigError(
                f"{_LOCAL_USER!r} is the name of the local user when no token is required, and a token for it would "
                "be refused on every request; give the agent another name"
            )
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with locked(self.path):
            entries = self._read()
            entries.append(
                {
                    "token_id": "tok_" + secrets.token_hex(8),
                    "agent_id": agent_id,
                    "sha256": _digest(token),
                    "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            )
            self._write(entries)
        return token

    # `builtins.list` in annotations: inside this class, `list` names the method below.
    def list(self) -> builtins.list[dict[str, str]]:
        """Every token as ``{token_id, agent_id, created_at}``, oldest first; never the token itself.

        Raises:
            ConfigError: the file is unreadable or malformed.
        """
        return [
            {"token_id": e["token_id"], "agent_id": e["agent_id"], "created_at": e["created_at"]}
            for e in self._read()  # the file keeps tokens in the order they were added
        ]

    def revoke(self, token_id: str) -> None:
        """Remove one token; the agent's other tokens keep working.

        Raises:
            ConfigError: no token has this id, or the file is unreadable or unwritable.
        """
        with locked(self.path):
            entries = self._read()
            kept = [e for e in entries if e["token_id"] != token_id]
            if len(kept) == len(entries):
                raise ConfigError(f"no token with id {token_id!r} in {self.path}; list the tokens to see their ids")
            self._write(kept)

    def verify(self, token: str) -> str | None:
        """The agent id `token` belongs to, or None when it is unknown or revoked.

        Raises:
            ConfigError: the file is unreadable or malformed (a missing file verifies nothing).
        """
        if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX):
            return None
        digest = _digest(token)
        found: str | None = None
        for entry in self._read():
            # No early exit: every entry is compared, so timing does not reveal a match's position.
            if hmac.compare_digest(entry["sha256"], digest):
                found = entry["agent_id"]
        return found

    def check(self) -> None:
        """Read the whole file once, so that a server with --auth refuses to start on a broken one.

        A missing file is fine (it verifies nobody until the first `add`).

        Raises:
            ConfigError: the file is unreadable or malformed; the message names it and the fix.
        """
        self._read()

    def _read(self) -> builtins.list[dict[str, Any]]:
        try:
            # Whoever may write it (or its directory) may add a token of their own and call as any agent.
            raw = read_trusted_file(self.path, max_bytes=_MAX_FILE_BYTES)
        except UntrustedPathError as exc:
            raise ConfigError(f"token file {exc}; every call with a token is refused until then") from None
        except OSError as exc:
            raise ConfigError(
                f"could not read token file {self.path}: {exc.strerror or exc}; make it a file the server "
                "can read, or move it away and mint new tokens"
            ) from exc
        if raw is None:
            return []
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or data.get("version") != _FORMAT_VERSION:
                raise ValueError(f"expected an object with version {_FORMAT_VERSION}")
            entries = data.get("tokens")
            if not isinstance(entries, list):
                raise ValueError("'tokens' is not a list")
            for entry in entries:
                if not isinstance(entry, dict) or not all(
                    isinstance(entry.get(k), str) for k in ("token_id", "agent_id", "sha256", "created_at")
                ):
                    raise ValueError("an entry lacks token_id, agent_id, sha256 or created_at")
        # RecursionError: deeply nested JSON; UnicodeDecodeError is a ValueError.
        except (ValueError, RecursionError) as exc:
            raise ConfigError(
                f"token file {self.path} is malformed ({_short(exc)}); fix it or move it away and mint new tokens"
            ) from None
        return list(entries)

    def _write(self, entries: builtins.list[dict[str, Any]]) -> None:
        text = json.dumps({"version": _FORMAT_VERSION, "tokens": entries}, indent=2) + "\n"
        write_atomically(self.path, text, _FILE_MODE)
