"""Who may use which workspace: the authenticated principal's access, checked on every call.

Without auth every caller is the local user, bounded by the guards alone (allowlist, client
roots, denied directories). With auth, a token names an agent; the agent's organization in the
directory lists the workspace roots its agents may use (`[organizations.ORG] workspace_roots`,
`read_only_workspace_roots`), and `homeport.policy.workspace_access` decides. A missing or
broken directory refuses every agent: access is granted, never assumed.

With access rules (`--access-rules FILE`), the rules decide instead of the directory: first the
caller's tool allowlist, then its workspace rules (`homeport.policy.access_rules`). The file is
re-read when it changes, so a grant taken away applies to the very next call, whatever session,
handle or default the caller holds; a file that cannot be read or parsed refuses every call.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from homeport._trusted_files import UntrustedPathError, read_trusted_file
from homeport.core.file_access import DirectoryCache
from homeport.errors import ConfigError, InvalidWorkspaceError, ToolNotAllowedError, WorkspaceAccessDeniedError
from homeport.policy.access_rules import (
    AccessDecision,
    AccessRules,
    Principal,
    decide_tool,
    decide_workspace_rules,
    parse_access_rules,
)
from homeport.policy.workspace_access import OrgWorkspaceRoots, require_workspace
from homeport.workspace.keys import canonical_key

__all__ = ["AccessRulesFile", "WorkspaceAccess", "canonical_pattern"]


class AccessRulesFile:
    """The access rules file, parsed again whenever its modification time or size changes.

    Raises (from `get`): ConfigError when the file is missing, unreadable or invalid.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._rules = AccessRules()

    def get(self) -> AccessRules:
        try:
            stat = self.path.stat()
        except OSError as exc:
            raise ConfigError(
                f"access rules {self.path} cannot be read ({exc.strerror}); every call is refused"
            ) from exc
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        with self._lock:
            if stamp != self._stamp:
                try:
                    # Whoever may write it (or its directory) may allow themselves anything.
                    raw = read_trusted_file(self.path)
                    if raw is None:
                        raise FileNotFoundError(self.path)
                    text = raw.decode("utf-8")
                except UntrustedPathError as exc:
                    raise ConfigError(f"access rules {exc}; every call is refused until then") from None
                except (OSError, UnicodeDecodeError) as exc:
                    raise ConfigError(
                        f"access rules {self.path} cannot be read ({exc}); every call is refused"
                    ) from exc
                self._rules = parse_access_rules(text, source=str(self.path), canonical=canonical_pattern)
                self._stamp = stamp
            return self._rules


def canonical_pattern(pattern: str) -> str:
    """`pattern` with the symlinks of its literal leading directories resolved, as workspaces arrive."""
    if not pattern.startswith("/"):
        return pattern  # a workspace key, not a path
    parts = pattern.split("/")
    literal = 0
    for part in parts[1:]:
        if any(c in part for c in "*?["):
            break
        literal += 1
    head = os.path.realpath("/" + "/".join(parts[1 : 1 + literal]))
    tail = parts[1 + literal :]
    return "/".join([head.rstrip("/"), *tail]) if tail else head


class WorkspaceAccess:
    """The access check of the call pipeline.

    `auth` says whether principals are verified agents (``--auth``); without it every principal is
    the local user, whatever its name, and only the guards bound it.
    """

    def __init__(
        self, directory: DirectoryCache | None = None, *, auth: bool = False, rules: AccessRulesFile | None = None
    ) -> None:
        self.directory = directory if directory is not None else DirectoryCache(None)
        self.auth = auth
        self.rules = rules

    def check_tool(self, principal: str, claims: Mapping[str, Any] | None, tool: str, group: str) -> None:
        """Refuse a tool the caller's allowlist in the access rules does not list (with rules only).

        Raises:
            ToolNotAllowedError: some allowlist names the caller and none of its lists has the tool.
            ConfigError: the rules file is unreadable or invalid (every call is refused).
        """
        if not self.auth or self.rules is None:
            return
        decision = decide_tool(self.rules.get(), Principal.from_claims(principal, claims), tool, group)
        if not decision.allowed:
            raise ToolNotAllowedError(
                f"{decision.reason}; an operator grants it by adding {tool!r} or {group!r} to that allowlist in "
                f"{self.rules.path}. Nothing was done."
            )

    def tools_allowed(
        self, principal: str, claims: Mapping[str, Any] | None, tools: Iterable[tuple[str, str]]
    ) -> frozenset[str]:
        """The names among `tools` ((name, group) pairs) that `check_tool` lets the caller call: every one
        without rules; none while the rules file is unreadable or invalid (as every call is refused then).
        For `tools/list`, which is a convenience: `check_tool` on every call stays the guard."""
        pairs = list(tools)
        if not self.auth or self.rules is None:
            return frozenset(name for name, _ in pairs)
        try:
            rules = self.rules.get()
        except ConfigError:
            return frozenset()
        caller = Principal.from_claims(principal, claims)
        return frozenset(name for name, group in pairs if decide_tool(rules, caller, name, group).allowed)

    def explain(
        self, principal: str, claims: Mapping[str, Any] | None, root: Path, *, write: bool, key: str | None = None
    ) -> AccessDecision:
        """The workspace rules' decision for `root`, or its logical `key` too (with rules only)."""
        assert self.rules is not None
        names = (root.as_posix(), key) if key else (root.as_posix(),)
        return decide_workspace_rules(self.rules.get(), Principal.from_claims(principal, claims), names, write=write)

    def check(
        self,
        principal: str,
        root: Path,
        *,
        write: bool,
        claims: Mapping[str, Any] | None = None,
        key: str | None = None,
    ) -> None:
        """Refuse `principal` a workspace it may not use (under auth only).

        `root` is the resolved workspace, already canonical. With access rules, they decide, and a
        pattern may match the root's path or the workspace's logical `key` (`github.com/acme/*`);
        otherwise the organization's roots in the directory.

        Raises:
            WorkspaceAccessDeniedError: refused by the access rules; or the agent is unknown, its
                organization has no roots, the workspace is outside them, or it is a write inside a
                read-only root.
            ConfigError: the directory or rules file is unreadable or invalid (every agent is refused).
        """
        if not self.auth:
            return
        if self.rules is not None:
            decision = self.explain(principal, claims, root, write=write, key=key)
            if not decision.allowed:
                fix = (
                    'pass a workspace it may write, or an operator gives that rule access = "write"'
                    if decision.level == "read"
                    else "pass a workspace a rule gives it, or an operator adds a [[workspaces]] rule"
                )
                raise WorkspaceAccessDeniedError(
                    f"{principal!r} may not {'write' if write else 'use'} workspace {str(root)!r}: "
                    f"{decision.reason}; {fix} in {self.rules.path}. Nothing was done."
                )
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
            # A logical workspace (--logical-workspaces) is checked segment by segment against the
            # roots read as keys: the root `/github.com/acme` holds the key `github.com/acme/api`.
            keys = OrgWorkspaceRoots(
                org.name,
                read_write=tuple(_as_key(r) for r in org.workspace_roots),
                read_only=tuple(_as_key(r) for r in org.read_only_workspace_roots),
            )
            require_workspace(principal, keys, PurePosixPath("/" + key), write=write)
            return
        roots = OrgWorkspaceRoots(
            org.name,
            read_write=tuple(_canonical(r) for r in org.workspace_roots),
            read_only=tuple(_canonical(r) for r in org.read_only_workspace_roots),
        )
        require_workspace(principal, roots, root, write=write)


def _as_key(root: str) -> PurePosixPath:
    # The key arrives canonical (lower case, no trailing '.' or '.git'), so a root read as a key is too.
    try:
        return PurePosixPath("/" + canonical_key(root.strip("/")))
    except InvalidWorkspaceError:
        return PurePosixPath(root)


def _canonical(root: str) -> Path:
    # The workspace arrives with its symlinks resolved, so the roots must be too (/srv/acme may
    # be a link); realpath of a root that does not exist yet is the path itself.
    return Path(os.path.realpath(root))
