"""Server-minted workspace handles: opaque names, bound to a principal, with a bounded lifetime.

A handle is a name, not a capability: whoever uses it is checked again (principal, guards) on
every call. A handle minted for a client that declared roots is bound to those roots: it was
checked against them when it was issued, and every later use is checked against them again, so a
2026-07-28 client (which would otherwise pay a round trip per call to list its roots) passes the
handle instead. Handles live in this process; a client that talks to several stateless processes
passes the path itself instead.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from homeport.errors import InvalidWorkspaceError

__all__ = ["HANDLE_PREFIX", "HandleEntry", "HandleRegistry"]

HANDLE_PREFIX = "ws_"


@dataclass(frozen=True)
class HandleEntry:
    """What a handle names: a workspace root, and the client roots it was checked against (None: none declared)."""

    principal: str
    root: Path
    roots: tuple[Path, ...] | None
    expires_at: float


class HandleRegistry:
    """Mint and look up handles; at most `capacity` live at once (oldest dropped first)."""

    def __init__(
        self, *, ttl_seconds: float = 24 * 3600, capacity: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl = ttl_seconds
        self._capacity = capacity
        self._clock = clock
        self._entries: OrderedDict[str, HandleEntry] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def looks_like_handle(value: str) -> bool:
        return value.startswith(HANDLE_PREFIX) and "/" not in value

    def mint(self, principal: str, root: Path, roots: tuple[Path, ...] | None = None) -> str:
        """A new handle for `principal` naming `root`, bound to the client roots `root` was checked against."""
        handle = HANDLE_PREFIX + secrets.token_urlsafe(18)
        with self._lock:
            self._entries[handle] = HandleEntry(principal, root, roots, self._clock() + self._ttl)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
        return handle

    def bound_to_roots(self, handle: str | None, principal: str) -> bool:
        """True when `handle` is live for `principal` and was minted under client roots (no need to ask again)."""
        if not handle or not self.looks_like_handle(handle):
            return False
        with self._lock:
            entry = self._entries.get(handle)
        return entry is not None and entry.principal == principal and entry.roots is not None

    def lookup(self, handle: str, principal: str) -> HandleEntry:
        """The entry behind `handle` for `principal`.

        Raises:
            InvalidWorkspaceError: unknown, expired, or minted for another principal (the three
                are reported alike so a handle reveals nothing to whoever guesses it).
        """
        with self._lock:
            entry = self._entries.get(handle)
            if entry is not None and entry.expires_at <= self._clock():
                del self._entries[handle]
                entry = None
        if entry is None or entry.principal != principal:
            raise InvalidWorkspaceError(
                f"workspace handle {handle!r} is unknown or expired; call use_workspace again with the "
                "project's absolute path"
            )
        return entry
