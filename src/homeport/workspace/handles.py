"""Workspace handles: signed names for a resolved workspace, that any process of one deployment verifies.

A handle is a name, not a capability: whoever uses it is checked again (principal, guards,
access) on every call. It is minted by `use_workspace` and carries what it names: the workspace
(a canonical root, or a logical key), the client roots it was checked against, and when it
expires, with an HMAC-SHA256 over all of it and the principal it was minted for. So a 2026-07-28
client, which keeps no session on any server, may send each call to another process behind a
load balancer: every process that holds the deployment's key verifies the handle by itself, and
nothing is kept between calls.

    ws_<base64url( mac[16] | version[1] | payload )>

`payload` is the JSON `[workspace, roots or null, expires_at]`, zlib-compressed when that is
shorter (version 2, else 1). The principal is not in the handle (the caller knows who it is):
it is in the MAC, so a handle presented by another principal fails as a tampered one does. A
client reads what a handle names (it was told when it was minted), and cannot change it.

Refusals (a bad MAC, another principal, another deployment's key, an expired or malformed
handle) are one error with one message, so that a handle reveals nothing to whoever guesses.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from homeport.errors import InvalidWorkspaceError

__all__ = ["HANDLE_PREFIX", "MIN_KEY_BYTES", "HandleEntry", "HandleSigner", "derive_key"]

HANDLE_PREFIX = "ws_"
MIN_KEY_BYTES = 32
_MAC_BYTES = 16
_PLAIN, _ZLIB = 1, 2
_HANDLE_KEY_LABEL = b"homeport/workspace-handle/v1"
_VERIFIED_CAPACITY = 4096


def derive_key(secret: bytes, label: bytes) -> bytes:
    """A key for one purpose (`label`) from the deployment's secret: handles and the SDK's sealed
    request state never share a key."""
    return hmac.new(secret, label, hashlib.sha256).digest()


@dataclass(frozen=True)
class HandleEntry:
    """What a handle names: a workspace (root or logical key), and the client roots it was checked
    against (None: none declared)."""

    principal: str
    root: Path
    roots: tuple[Path, ...] | None
    expires_at: float


class HandleSigner:
    """Mint and verify handles under the deployment's secret.

    `secret` is called once, on the first handle minted or verified, so a process that never sees
    one never reads (or creates) the key.
    """

    def __init__(
        self,
        secret: Callable[[], bytes],
        *,
        ttl_seconds: float = 24 * 3600,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret
        self._key: bytes | None = None
        self._key_lock = threading.Lock()
        self._ttl = ttl_seconds
        self._clock = clock
        # Verified handles (a pure function of handle, principal and secret; the expiry is checked on
        # each use): a handle is passed on every call, and verifying it costs about 10 µs, this 0.3.
        self._verified: dict[tuple[str, str], HandleEntry] = {}

    @staticmethod
    def looks_like_handle(value: str) -> bool:
        return value.startswith(HANDLE_PREFIX) and "/" not in value

    def mint(self, principal: str, root: Path, roots: tuple[Path, ...] | None = None) -> str:
        """A handle for `principal` naming `root`, bound to the client roots `root` was checked against.

        Raises:
            ConfigError: the deployment's key cannot be read or created (from the `secret` callable).
        """
        expires = int(self._clock() + self._ttl)
        document = [str(root), [str(p) for p in roots] if roots is not None else None, expires]
        plain = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        packed = zlib.compress(plain, 9)
        body = bytes([_ZLIB]) + packed if len(packed) < len(plain) else bytes([_PLAIN]) + plain
        return HANDLE_PREFIX + _b64(self._mac(principal, body) + body)

    def bound_to_roots(self, handle: str | None, principal: str) -> bool:
        """True when `handle` verifies for `principal` and was minted under client roots (no need to ask again)."""
        if not handle or not self.looks_like_handle(handle):
            return False
        try:
            return self.lookup(handle, principal).roots is not None
        except InvalidWorkspaceError:
            return False  # resolution refuses it, with the message

    def lookup(self, handle: str, principal: str) -> HandleEntry:
        """What `handle` names, for `principal`.

        Raises:
            InvalidWorkspaceError: not minted under this deployment's key for `principal`, changed,
                or expired (all reported alike).
            ConfigError: the deployment's key cannot be read.
        """
        entry = self._verify(handle, principal)
        if entry is None:
            raise InvalidWorkspaceError(
                f"workspace handle {handle!r} is unknown or expired; call use_workspace again with the "
                "project's absolute path"
            )
        return entry

    def _verify(self, handle: str, principal: str) -> HandleEntry | None:
        entry = self._verified.get((handle, principal))
        if entry is None:
            entry = self._check(handle, principal)
            if entry is None:
                return None
            if len(self._verified) >= _VERIFIED_CAPACITY:
                self._verified.clear()
            self._verified[(handle, principal)] = entry
        return entry if entry.expires_at > self._clock() else None

    def _check(self, handle: str, principal: str) -> HandleEntry | None:
        if not self.looks_like_handle(handle):
            return None
        text = handle[len(HANDLE_PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            return None
        if _b64(raw) != text:  # only the one spelling this code writes
            return None
        mac, body = raw[:_MAC_BYTES], raw[_MAC_BYTES:]
        if len(mac) != _MAC_BYTES or not body or not hmac.compare_digest(mac, self._mac(principal, body)):
            return None
        try:  # signed by this deployment: malformed only if a version of the code wrote it differently
            plain = zlib.decompress(body[1:]) if body[0] == _ZLIB else body[1:] if body[0] == _PLAIN else b""
            root, roots, expires = json.loads(plain.decode("utf-8"))
            return HandleEntry(
                principal=principal,
                root=Path(root),
                roots=tuple(Path(p) for p in roots) if roots is not None else None,
                expires_at=float(expires),
            )
        except (zlib.error, UnicodeDecodeError, ValueError, TypeError):
            return None

    def _mac(self, principal: str, body: bytes) -> bytes:
        who = principal.encode("utf-8", "surrogatepass")
        message = len(who).to_bytes(4, "big") + who + body
        return hmac.new(self._handle_key(), message, hashlib.sha256).digest()[:_MAC_BYTES]

    def _handle_key(self) -> bytes:
        key = self._key
        if key is None:
            with self._key_lock:
                if self._key is None:
                    self._key = derive_key(self._secret(), _HANDLE_KEY_LABEL)
                key = self._key
        return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")
