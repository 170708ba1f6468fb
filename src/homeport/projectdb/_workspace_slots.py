"""How many worker threads one workspace's database calls may hold at once.

Over HTTP every tool call runs on one of anyio's worker threads, 40 shared by the whole process.
A database call holds its thread for as long as the database takes; before this bound, 60 slow
queries for one workspace took every thread, and an unrelated write to another workspace waited
10 s for one (issue 22: until the connection pool's timeout let the waiting calls fail).

Now at most `running` calls of a workspace work on its database (as many as its engine's pool
has connections), at most `waiting` more wait for them (up to `wait_seconds`), and any further
call is refused at once with the reason: it gives its thread back instead of keeping it.

    slots = WorkspaceSlots(running=4, waiting=4)
    with slots.hold(root):      # raises ProjectDatabaseError when the workspace is saturated
        ...                     # the call's work on the database
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from homeport.errors import ProjectDatabaseError

__all__ = ["WorkspaceSlots"]


@dataclass
class _Load:
    running: int = 0
    waiting: int = 0


class WorkspaceSlots:
    """Bounds the calls one workspace has on its database at once (see the module docstring)."""

    def __init__(self, *, running: int = 4, waiting: int = 4, wait_seconds: float = 10.0) -> None:
        if running < 1 or waiting < 0:
            raise ValueError("running must be at least 1 and waiting at least 0")
        self.running, self.waiting, self.wait_seconds = running, waiting, wait_seconds
        self._loads: dict[str, _Load] = {}
        self._changed = threading.Condition()

    @contextmanager
    def hold(self, root: Path) -> Iterator[None]:
        """Run the block as one of the workspace's running calls.

        Raises:
            ProjectDatabaseError: the workspace already has `running` calls and `waiting` more, or
                none of them finished within `wait_seconds`.
        """
        key = str(root)
        self._enter(key)
        try:
            yield
        finally:
            with self._changed:
                load = self._loads[key]
                load.running -= 1
                if not load.running and not load.waiting:
                    del self._loads[key]
                self._changed.notify_all()

    def load_of(self, root: Path) -> tuple[int, int]:
        """(running, waiting) calls of the workspace at `root`, for tests and `doctor`."""
        with self._changed:
            load = self._loads.get(str(root))
            return (load.running, load.waiting) if load else (0, 0)

    def _enter(self, key: str) -> None:
        with self._changed:
            load = self._loads.setdefault(key, _Load())
            if load.running < self.running:
                load.running += 1
                return
            if load.waiting >= self.waiting:
                raise ProjectDatabaseError(
                    f"this workspace already has {load.running} database calls running and {load.waiting} waiting "
                    "for them, so this one was refused without running (it would only hold a server thread); "
                    "wait for them to finish, or make the slow ones faster (WHERE, LIMIT, an index, a lower "
                    "statement_timeout_ms under [database] in .homeport/config.toml)"
                )
            load.waiting += 1
            deadline = time.monotonic() + self.wait_seconds
            try:
                while load.running >= self.running:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise ProjectDatabaseError(
                            f"this workspace's {load.running} running database calls did not finish within "
                            f"{self.wait_seconds:g} s, so this one was refused without running; wait for them, or "
                            "make the slow ones faster (WHERE, LIMIT, an index, a lower statement_timeout_ms)"
                        )
                    self._changed.wait(remaining)
            finally:
                load.waiting -= 1
            load.running += 1
