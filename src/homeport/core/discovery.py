"""The projects with a store under the allowed roots: what the dashboard lists on a fresh server.

A server started with `serve --http --allow-root ~/src` has opened no store yet, so "the workspaces
it knows" would be none, although the projects under ~/src hold memory (issue 27). This walk finds
them, bounded so that a wide root never turns a page load into a walk of the disk:

- at most `DISCOVERY_DEPTH` levels below each allowed root (~/src/org/repo is two);
- at most `DISCOVERY_BUDGET` folders looked at in all, and `DISCOVERY_LIMIT` projects listed;
- no symlink followed (a link could lead out of the allowed roots), hidden folders and the usual
  bulky ones (node_modules, .venv) skipped;
- a `.homeport/` that is a symlink is no store (the guard refuses it too), and every project found
  passes `WorkspaceGuard.check`, the check a call naming it gets: denied and private trees drop out.

Found is not allowed: the dashboard still reads each one through the call pipeline, which applies the
caller's access (under --auth a person sees only their organization's projects).

Measured: 5,000 empty folders (50 x 100, two levels) are walked in 160-210 ms on a shared 2-core machine
under load; the dashboard runs it in a worker thread, once per load of its workspace list.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from homeport.errors import WorkspaceDeniedError
from homeport.store.location import STORE_DIRNAME, STORE_FILENAME
from homeport.workspace import WorkspaceGuard

__all__ = ["DISCOVERY_BUDGET", "DISCOVERY_DEPTH", "DISCOVERY_LIMIT", "stores_under"]

DISCOVERY_DEPTH = 3
DISCOVERY_BUDGET = 5000
DISCOVERY_LIMIT = 50
_SKIP = frozenset({"node_modules", "__pycache__", "venv", "site-packages", "target", "build", "dist"})


def stores_under(
    roots: Iterable[Path],
    guard: WorkspaceGuard,
    *,
    depth: int = DISCOVERY_DEPTH,
    budget: int = DISCOVERY_BUDGET,
    limit: int = DISCOVERY_LIMIT,
) -> list[Path]:
    """Project roots holding a store, breadth first under each of `roots` (the root itself included),
    that `guard` accepts; in the order found, at most `limit`, after looking at most at `budget` folders."""
    found: list[Path] = []
    pending: deque[tuple[Path, int]] = deque((Path(os.path.realpath(r)), 0) for r in roots)
    looked = 0
    while pending and len(found) < limit and looked < budget:
        here, level = pending.popleft()
        looked += 1
        if _holds_store(here) and _accepted(here, guard) and here not in found:
            found.append(here)
        if level >= depth:
            continue
        try:
            with os.scandir(here) as entries:
                below = sorted(e.name for e in entries if _descend(e))
        except OSError:
            continue  # unreadable: nothing to list from it
        pending.extend((here / name, level + 1) for name in below)
    return found


def _descend(entry: os.DirEntry[str]) -> bool:
    if entry.name.startswith(".") or entry.name in _SKIP:
        return False
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _holds_store(directory: Path) -> bool:
    try:
        folder = os.lstat(directory / STORE_DIRNAME).st_mode
        database = os.lstat(directory / STORE_DIRNAME / STORE_FILENAME).st_mode
    except OSError:
        return False
    return stat.S_ISDIR(folder) and stat.S_ISREG(database)


def _accepted(directory: Path, guard: WorkspaceGuard) -> bool:
    try:
        guard.check(directory, None, label=str(directory))
    except WorkspaceDeniedError:
        return False
    return True
