"""Memory that travels with git: the workspace's memory as files on a hidden ref, merged without conflicts.

`engine.sync_memory` is the one entry point (the `sync` tool and `homeport sync` call it through the
core); `document` is the file format and its merge (pure), `clock` the hybrid logical clocks, `items`
the store's side, `repository` the git side. This package sits beside the store and below the core.
"""

from homeport.sync.engine import DEFAULT_REF, FALLBACK_BRANCH, open_conflicts, resolve_conflicts, sync_memory

__all__ = ["DEFAULT_REF", "FALLBACK_BRANCH", "open_conflicts", "resolve_conflicts", "sync_memory"]
