"""Who may use which workspace: the authenticated principal's access, checked on every call.

Without auth every caller is the local user, bounded by the guards alone (allowlist, client
roots, denied directories). With auth, a token names an agent; the agent's organization in the
directory lists the workspace roots its agents may use (`[organizations.ORG] workspace_roots`,
`read_only_workspace_roots`), and `homeport.policy.workspace_access` decides. A missing or
broken directory refuses every agent: access is granted, never assumed.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from homeport.errors import ConfigError, WorkspaceAccessDeniedError
from homeport.policy.workspace_access import OrgWorkspaceRoots, require_workspace
from homeport.server.file_access import DirectoryCache

__all__ = ["WorkspaceAccess"]


class WorkspaceAccess:
    """The access check of the call pipeline.

    `auth` says whether principals are verified agents (``--auth``); without it every principal is
    the local user, whatever its name, and only the guards bound it.
    """

    def __init__(self, directory: DirectoryCache | None = None, *, auth: bool = False) -> None:
        self.directory = directory if directory is not None else DirectoryCache(None)
        self.auth = auth

    def check(self, principal: str, root: Path, *, write: bool, key: str | None = None) -> None:
        """Refuse `principal` a workspace outside its organization's roots (under auth only).

        `root` is the resolved workspace, already canonical. A logical workspace (`key`, on a server
        run with --logical-workspaces, where no workspace is a path) is checked segment by segment
        against the roots read as keys: the root `/github.com/acme` holds the key `github.com/acme/api`.

        Raises:
            WorkspaceAccessDeniedError: the agent is unknown, its organization has no roots, the
                workspace is outside them, or it is a write inside a read-only root.
            ConfigError: the directory file is unreadable or invalid (every agent is refused).
        """
        if not self.auth:
            return
        directory = self.directory.get()
        try:
            org = directory.organization(directory.agent(principal).org)
        except ConfigError:
            where = self.directory.path or "(none configured: pass --directory FILE)"
            raise WorkspaceAccessDeniedError(
                f"agent {principal!r} is not in the directory {where}, so it may use no workspace; add it with "
                f"`homeport directory add-agent ORG {principal}`"
            ) from None
        if key is not None:
            keys = OrgWorkspaceRoots(
                org.name,
                read_write=tuple(PurePosixPath(r) for r in org.workspace_roots),
                read_only=tuple(PurePosixPath(r) for r in org.read_only_workspace_roots),
            )
            require_workspace(principal, keys, PurePosixPath("/" + key), write=write)
            return
        roots = OrgWorkspaceRoots(
            org.name,
            read_write=tuple(_canonical(r) for r in org.workspace_roots),
            read_only=tuple(_canonical(r) for r in org.read_only_workspace_roots),
        )
        require_workspace(principal, roots, root, write=write)


def _canonical(root: str) -> Path:
    # The workspace arrives with its symlinks resolved, so the roots must be too (/srv/acme may
    # be a link); realpath of a root that does not exist yet is the path itself.
    return Path(os.path.realpath(root))
