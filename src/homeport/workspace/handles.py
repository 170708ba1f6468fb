"""Server-minted workspace handles: opaque names, bound to a principal, with a bounded lifetime.

A handle is a name, not a capability: whoever uses it is checked again (principal, guards) on
every call. Handles live in this process; a 2026-era client that talks to several stateless
processes passes the path itself instead.
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

__all__ = ["HANDLE_PREFIX", "HandleRegistry"]

HANDLE_PREFIX = "ws_"


@dataclass(frozen=True)
class _Entry:
    principal: str
    root: Path
    expires_at: float


class HandleRegistry:
    """Mint and look up handles; at most `capacity` live at once (oldest dropped first)."""

    def __init__(
        self, *, ttl_seconds: float = 24 * 3600, capacity: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl = ttl_seconds
        self._capacity = capacity
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def looks_like_handle(value: str) -> bool:
        return value.startswith(HANDLE_PREFIX) and "/" not in value

    def mint(self, principal: str, root: Path) -> str:
        handle = HANDLE_PREFIX + secrets.token_urlsafe(18)
        with self._lock:
            self._entries[handle] = _Entry(principal, root, self._clock() + self._ttl)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
        return handle

    def lookup(self, handle: str, principal: str) -> Path:
        """The root behind `handle` for `principal`.

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
        return entry.root
