"""Resolve the workspace of one call: sources in order, one normalisation, guards.

`WorkspaceResolver.resolve` takes everything a call carries as plain values (`CallInputs`) and
the process's settings (`ResolverSettings`); it never reads globals or the environment, so the
same function serves the MCP tools, the CLI and `homeport where`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from homeport.errors import (
    AmbiguousWorkspaceError,
    ExplicitWorkspaceRequired,
    HomeportError,
    InvalidWorkspaceError,
    WorkspaceContainsProjectsError,
    WorkspaceDeniedError,
    WorkspaceUnresolvedError,
)
from homeport.workspace.guards import WorkspaceGuard
from homeport.workspace.handles import HandleSigner
from homeport.workspace.keys import canonical_key, looks_like_path, validate_key
from homeport.workspace.paths import canonical_directory, decode_candidate, within_any
from homeport.workspace.sources import EXPLICIT_SOURCES, Source

__all__ = ["CLIENT_ENV_VARS", "CallInputs", "Resolution", "ResolverSettings", "Seen", "Workspace", "WorkspaceResolver"]

Transport = Literal["stdio", "http", "cli"]
CLIENT_ENV_VARS = ("CLAUDE_PROJECT_DIR", "WORKSPACE_FOLDER_PATHS")


@dataclass(frozen=True)
class Workspace:
    """A resolved workspace: its canonical root and the source that named it."""

    root: Path
    source: Source
    reason: str
    is_project: bool = True
    # The client roots it was checked against (None: the client declared none); a handle keeps them.
    client_roots: tuple[Path, ...] | None = field(default=None, compare=False)
    # A logical workspace (`--logical-workspaces`): its key; `root` is then where its store lives on
    # the server, never a project directory, and no tool may treat it as one.
    logical_key: str | None = None

    @property
    def key(self) -> str:
        return self.logical_key if self.logical_key is not None else str(self.root)

    def describe(self) -> dict[str, str]:
        """What every tool result carries under `workspace`."""
        if self.logical_key is not None:
            return {"key": self.logical_key, "source": self.source.value}
        return {"root": str(self.root), "source": self.source.value}


@dataclass(frozen=True)
class ResolverSettings:
    """Process-wide inputs, built once by the entry point's composition root."""

    guard: WorkspaceGuard
    transport: Transport = "stdio"
    config_workspace: str | None = None
    client_env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    require_explicit: bool = False
    # Set: workspaces are logical keys, never paths, and this maps a key to its store's directory.
    logical_root: Callable[[str], Path] | None = None


@dataclass(frozen=True)
class CallInputs:
    """What one call carries.

    `roots` are the client's root URIs, a bound on every source: None when the client declared
    no roots capability, listed none, or could not be asked (`roots_note` then says which, for
    `where_am_i`); a handle minted under roots carries its own.
    """

    principal: str = "local"
    argument: str | None = None
    header: str | None = None
    query: str | None = None
    session: str | None = None
    roots: Sequence[str] | None = None
    roots_note: str = ""


@dataclass(frozen=True)
class Seen:
    source: Source
    value: str | None
    note: str = ""

    def describe(self) -> dict[str, str | None]:
        return {"source": self.source.value, "value": self.value, "note": self.note}

    @property
    def hidden_remotely(self) -> bool:
        """The server's own directory and environment: never shown to an HTTP caller."""
        return self.source in (Source.CLIENT_ENV, Source.CWD)


@dataclass(frozen=True)
class Resolution:
    workspace: Workspace
    call: CallInputs
    resolver: WorkspaceResolver

    @property
    def seen(self) -> tuple[Seen, ...]:
        """What each source held (built on demand: most calls never ask)."""
        return self.resolver.observe(self.call)


class WorkspaceResolver:
    """Tie a call to one workspace, or explain precisely why it cannot be tied to any."""

    def __init__(self, settings: ResolverSettings, handles: HandleSigner) -> None:
        self.settings = settings
        self.handles = handles

    def observe(self, call: CallInputs) -> tuple[Seen, ...]:
        """What each source holds for this call, whether or not it would win."""
        s = self.settings
        seen = [
            Seen(Source.ARGUMENT, call.argument),
            Seen(Source.HEADER, call.header, "" if s.transport == "http" else "HTTP only"),
            Seen(Source.QUERY, call.query, "" if s.transport == "http" else "HTTP only"),
            Seen(Source.SESSION, call.session),
            Seen(Source.CONFIG, s.config_workspace),
            Seen(
                Source.ROOTS,
                ", ".join(call.roots) if call.roots else None,
                call.roots_note or ("" if call.roots is not None else "not declared by the client"),
            ),
        ]
        env = ", ".join(f"{k}={v}" for k, v in s.client_env.items() if v) or None
        seen.append(Seen(Source.CLIENT_ENV, env, "" if s.transport == "stdio" else "stdio only"))
        seen.append(
            Seen(Source.CWD, str(s.cwd) if s.cwd else None, "" if s.transport != "http" else "never used over HTTP")
        )
        return tuple(seen)

    def resolve(self, call: CallInputs, *, write: bool = False) -> Resolution:
        """Resolve `call` to a workspace.

        Raises:
            WorkspaceError: a subclass naming the source, the bad value and what to do instead.
        """
        # A client's roots are directories on its own machine: they say nothing of a logical workspace.
        roots = None if self.settings.logical_root is not None else self._client_roots(call.roots)
        workspace = self._first_candidate(call, roots)
        if write:
            self._check_write(workspace)
        return Resolution(workspace, call, self)

    def _check_write(self, workspace: Workspace) -> None:
        if self.settings.require_explicit and workspace.source not in EXPLICIT_SOURCES:
            raise ExplicitWorkspaceRequired(
                f"this server requires an explicit workspace for writes, and {workspace.root} came only "
                f"from {workspace.source.said}; pass the workspace argument, call use_workspace, or send "
                "X-Workspace-Id"
            )
        if not workspace.is_project:
            # A folder of projects (the allowed root, ~/src) must never become one shared store for all of them.
            below = self.settings.guard.projects_below(workspace.root)
            if below:
                listed = ", ".join(str(p) for p in below)
                raise WorkspaceContainsProjectsError(
                    f"{workspace.root} (from {workspace.source.said}) is not a project (no .homeport/ or git "
                    f"repository) but holds projects: {listed}; pass the one you mean as the workspace, or "
                    f"create {workspace.root}/.homeport/ if this folder is a project of its own"
                )

    def _first_candidate(self, call: CallInputs, roots: list[Path] | None) -> Workspace:
        s = self.settings
        if call.argument:
            if self.handles.looks_like_handle(call.argument):
                entry = self.handles.lookup(call.argument, call.principal)
                bound = roots if roots is not None else (list(entry.roots) if entry.roots is not None else None)
                return self._accept(str(entry.root), Source.ARGUMENT, bound, label=f"handle {call.argument!r}")
            return self._accept(call.argument, Source.ARGUMENT, roots)
        if s.transport == "http":
            if call.header:
                return self._accept(call.header, Source.HEADER, roots, label=f"X-Workspace-Id {call.header!r}")
            if call.query:
                return self._accept(call.query, Source.QUERY, roots, label=f"project_path {call.query!r}")
        if call.session:
            return self._accept(call.session, Source.SESSION, roots, label=f"session default {call.session!r}")
        if s.config_workspace:
            return self._accept(
                s.config_workspace, Source.CONFIG, roots, label=f"--workspace/HOMEPORT_WORKSPACE {s.config_workspace!r}"
            )
        if roots:
            return self._accept(str(self._pick_root(roots)), Source.ROOTS, roots)
        if s.transport != "http":
            hint = self._client_env_hint()
            if hint is not None:
                name, value = hint
                return self._accept(value, Source.CLIENT_ENV, roots, label=f"{name} {value!r}")
            if s.cwd is not None:
                cwd = canonical_directory(s.cwd)
                why = s.guard.denied.reason(cwd, as_cwd=True)
                if why is None:
                    return self._accept(str(cwd), Source.CWD, roots, label=f"the current directory {cwd}")
                seen = tuple(
                    Seen(x.source, x.value, f"refused: {why}") if x.source is Source.CWD else x
                    for x in self.observe(call)
                )
                raise _unresolved(seen)
        raise _unresolved(self.observe(call))

    def _accept(self, value: str, source: Source, client_roots: list[Path] | None, *, label: str = "") -> Workspace:
        if self.settings.logical_root is not None:
            return self._accept_key(value, source)
        label = label or f"{value!r} (from {source.said})"
        guard = self.settings.guard
        try:
            candidate = decode_candidate(value)
        except InvalidWorkspaceError as exc:
            raise type(exc)(f"{exc.message} (from {source.said})") from None
        # Bounds first: outside them, whether something exists there is none of the caller's business.
        guard.check_reach(candidate, client_roots, label=label)
        try:
            directory = canonical_directory(value)
        except InvalidWorkspaceError as exc:
            raise type(exc)(f"{exc.message} (from {source.said})") from None
        try:
            found = guard.project_root(directory, client_roots or ())
        except WorkspaceDeniedError as exc:
            raise WorkspaceDeniedError(f"workspace {label}: {exc.message}") from None
        guard.check(found.path, client_roots, label=label)
        return Workspace(
            root=found.path,
            source=source,
            reason=found.why,
            is_project=found.is_project,
            client_roots=tuple(client_roots) if client_roots is not None else None,
        )

    def _accept_key(self, value: str, source: Source) -> Workspace:
        assert self.settings.logical_root is not None
        text = value.strip()
        if looks_like_path(text):
            raise InvalidWorkspaceError(
                f"workspace {value!r} (from {source.said}) is a path, and this server keeps logical workspaces "
                "(--logical-workspaces): name the project by its key, such as github.com/acme/api "
                "(`homeport where` in the project shows it)"
            )
        where = f"workspace (from {source.said})"
        key = canonical_key(validate_key(text, where=where), where=where)
        return Workspace(
            root=self.settings.logical_root(key),
            source=source,
            reason=f"logical workspace {key!r}",
            logical_key=key,
        )

    def _client_roots(self, roots: Sequence[str] | None) -> list[Path] | None:
        """Canonical client roots: None for no bound (none declared, or an empty list), else the local
        directories among them (empty when none is one: nothing is inside them)."""
        if not roots:
            return None
        usable: list[Path] = []
        for uri in roots:
            try:
                usable.append(canonical_directory(uri))
            except HomeportError:
                continue  # vscode-remote://, vanished folders: unusable roots neither win nor widen access
        return usable

    def _pick_root(self, roots: list[Path]) -> Path:
        if len(roots) == 1:
            return roots[0]
        cwd = self.settings.cwd
        if cwd is not None and self.settings.transport != "http":  # an HTTP server's cwd says nothing of the client
            containing = within_any(Path(os.path.realpath(cwd)), roots)
            if containing is not None:
                return containing
        listed = ", ".join(str(r) for r in roots)
        raise AmbiguousWorkspaceError(
            f"the client declared {len(roots)} roots ({listed}) and none contains the server's directory; "
            "pass the workspace argument naming one of them, or call use_workspace"
        )

    def _client_env_hint(self) -> tuple[str, str] | None:
        env = self.settings.client_env
        if env.get("CLAUDE_PROJECT_DIR"):
            return "CLAUDE_PROJECT_DIR", env["CLAUDE_PROJECT_DIR"]
        folders = [p for p in re.split(rf"[,{re.escape(os.pathsep)}]", env.get("WORKSPACE_FOLDER_PATHS", "")) if p]
        if len(folders) == 1:
            return "WORKSPACE_FOLDER_PATHS", folders[0]
        return None


def _unresolved(seen: tuple[Seen, ...]) -> WorkspaceUnresolvedError:
    return WorkspaceUnresolvedError(
        _unresolved_message(seen), tuple((x.source.value, x.value, x.note or "") for x in seen)
    )


def _unresolved_message(seen: tuple[Seen, ...]) -> str:
    saw = "; ".join(f"{x.source.value}: {x.value or '-'}{' (' + x.note + ')' if x.note else ''}" for x in seen)
    return (
        "no workspace for this call. Set one of: the workspace argument (absolute path, file:// URI or a "
        "handle from use_workspace); the X-Workspace-Id header or ?project_path= on the URL (HTTP); "
        "use_workspace (sessions); homeport serve --workspace DIR or HOMEPORT_WORKSPACE; client roots; "
        "CLAUDE_PROJECT_DIR; or start the server in the project directory (stdio). "
        f"Seen: {saw}"
    )
