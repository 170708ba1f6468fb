"""Who may use which workspace: the authenticated principal's access, checked on every call.

Without auth every caller is the local user, bounded by the guards alone (allowlist, client
roots, denied directories). With auth, a token names an agent; the agent's organization in the
directory lists the workspace roots its agents may use, and the policy layer decides.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["WorkspaceAccess"]


class WorkspaceAccess:
    """The access check of the call pipeline."""

    def check(self, principal: str, root: Path, *, write: bool) -> None:
        """Raises: PermissionDeniedError when `principal` may not use `root`.

        Until the directory lists each organization's workspace roots, every principal passes here
        and only the guards bound it (the pipeline step exists so that rule lands in one place).
        """
