"""Which workspaces an authenticated agent may use: those inside its organization's roots.

The directory gives each organization a list of workspace roots (read and write) and,
optionally, read-only roots. An agent may use a workspace that lies inside one of its own
organization's roots, compared by path components; writes need a read-write root. An
organization without roots gets nothing: access is granted, never assumed.

Pure: no I/O. The roots and the workspace arrive canonical (symlinks resolved) from the server's
access step; this module only compares paths. Without auth there is no agent and this rule does
not apply: the local user is bounded by the guards alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from homeport.errors import WorkspaceAccessDeniedError

__all__ = ["OrgWorkspaceRoots", "WorkspaceAccessDecision", "decide_workspace", "require_workspace"]


@dataclass(frozen=True)
class OrgWorkspaceRoots:
    """One organization's roots, canonical and absolute."""

    org: str
    read_write: tuple[PurePath, ...] = ()
    read_only: tuple[PurePath, ...] = ()


@dataclass(frozen=True)
class WorkspaceAccessDecision:
    allowed: bool
    root: PurePath | None  # the organization root that holds the workspace, if any
    read_only: bool  # the workspace is only inside read-only roots
    rule: str


def _holding(roots: tuple[PurePath, ...], workspace: PurePath) -> PurePath | None:
    # By components: '/srv/acme-evil' is not inside '/srv/acme'. The nearest (longest) root wins.
    inside = [r for r in roots if workspace.is_relative_to(r)]
    return max(inside, key=lambda r: len(r.parts)) if inside else None


def decide_workspace(roots: OrgWorkspaceRoots, workspace: PurePath, *, write: bool) -> WorkspaceAccessDecision:
    """Whether an agent of `roots.org` may use `workspace` (for a write when `write`)."""
    if not roots.read_write and not roots.read_only:
        return WorkspaceAccessDecision(False, None, False, "the organization has no workspace roots")
    held = _holding(roots.read_write, workspace)
    if held is not None:
        return WorkspaceAccessDecision(True, held, False, "inside a workspace root of the organization")
    held = _holding(roots.read_only, workspace)
    if held is None:
        return WorkspaceAccessDecision(False, None, False, "outside the organization's workspace roots")
    if write:
        return WorkspaceAccessDecision(False, held, True, "inside a read-only workspace root of the organization")
    return WorkspaceAccessDecision(True, held, True, "inside a read-only workspace root of the organization")


def require_workspace(agent: str, roots: OrgWorkspaceRoots, workspace: PurePath, *, write: bool) -> PurePath:
    """The organization root that holds `workspace`, or a refusal that says how to grant it.

    Raises:
        WorkspaceAccessDeniedError: the organization has no roots, the workspace is outside them,
            or it is a write inside a read-only root.
    """
    decision = decide_workspace(roots, workspace, write=write)
    if decision.allowed:
        assert decision.root is not None
        return decision.root
    org = roots.org
    who = f"agent {agent!r} of organization {org!r}"
    if not roots.read_write and not roots.read_only:
        raise WorkspaceAccessDeniedError(
            f"{who} may not use workspace {str(workspace)!r}: the organization has no workspace roots; "
            f"an operator grants one with `homeport directory add-workspace-root {org} DIR`"
        )
    if decision.read_only:
        raise WorkspaceAccessDeniedError(
            f"{who} may only read workspace {str(workspace)!r}: {decision.root} is a read-only root of the "
            "organization; an operator grants writes with "
            f"`homeport directory add-workspace-root {org} {decision.root}`"
        )
    listed = ", ".join(str(r) for r in roots.read_write)
    if roots.read_only:
        listed += (", " if listed else "") + ", ".join(f"{r} (read-only)" for r in roots.read_only)
    raise WorkspaceAccessDeniedError(
        f"{who} may not use workspace {str(workspace)!r}: it is outside the organization's workspace roots "
        f"({listed}); pass a workspace inside one of them, or an operator grants more with "
        f"`homeport directory add-workspace-root {org} DIR`"
    )
