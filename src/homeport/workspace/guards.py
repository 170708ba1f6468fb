"""Which canonical directories may become workspaces, and where a project's root is.

The guard answers two questions for a canonical directory: is it allowed (inside the server's
allowlist, inside the client's declared roots, not a denied directory), and which ancestor is the
project root (nearest `.homeport/`, else nearest git root, else itself). The ancestor search never
climbs above the allowed root or client root that contains the directory, and never settles on a
denied directory, so a dotfiles repository in the home directory cannot swallow every project.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from homeport.errors import WorkspaceDeniedError
from homeport.workspace.paths import within_any

__all__ = ["DeniedDirectories", "WorkspaceGuard", "default_denied"]

# Never a workspace themselves; projects below them are fine (/var/www/app, /srv/app, /tmp/x).
_DENIED_EXACT = (
    "/",
    "/usr",
    "/usr/local",
    "/var",
    "/tmp",
    "/opt",
    "/srv",
    "/home",
    "/Users",
    "/mnt",
    "/media",
    "/private",
    "/private/tmp",
    "/private/var",
    "/Volumes",
)
# Nothing at or below these is a project.
_DENIED_TREES = (
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/etc",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/lib64",
    "/usr/share",
    "/usr/include",
    "/usr/libexec",
    "/var/lib",
    "/var/log",
    "/var/cache",
    "/var/run",
    "/run",
    "/System",
    "/Library",
    "/private/etc",
)
# Where package runners start servers (uvx, npx, pipx): never mistaken for the project by the cwd.
_CACHE_TREES_UNDER_HOME = (
    ".cache",
    ".npm",
    ".local/share/uv",
    ".local/pipx",
    ".local/share/pipx",
    ".cargo",
    ".rustup",
    ".pyenv",
    ".nvm",
    "Library/Caches",
)


@dataclass(frozen=True)
class DeniedDirectories:
    exact: frozenset[Path]
    trees: tuple[Path, ...]
    cwd_only_trees: tuple[Path, ...]

    def __post_init__(self) -> None:
        # Checked on every ancestor of every call: plain strings, one C-level startswith each.
        object.__setattr__(self, "_exact", frozenset(map(str, self.exact)))
        object.__setattr__(self, "_trees", _prefixes(self.trees))
        object.__setattr__(self, "_cwd_trees", _prefixes(self.cwd_only_trees))

    def reason(self, path: Path, *, as_cwd: bool = False) -> str | None:
        """Why `path` (canonical) may not be a workspace, or None if it may."""
        text = str(path)
        if text in self._exact:  # type: ignore[attr-defined]
            return "the filesystem root" if text == "/" else f"{path} is a system or home directory"
        if _inside(text, self._trees):  # type: ignore[attr-defined]
            return f"{path} is inside the system directory {within_any(path, self.trees)}"
        if as_cwd and _inside(text, self._cwd_trees):  # type: ignore[attr-defined]
            return (
                f"{path} is inside the package cache {within_any(path, self.cwd_only_trees)}, where package "
                "runners start servers"
            )
        return None


def _prefixes(paths: tuple[Path, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    return frozenset(map(str, paths)), tuple(str(p).rstrip("/") + "/" for p in paths)


def _inside(text: str, trees: tuple[frozenset[str], tuple[str, ...]]) -> bool:
    roots, prefixes = trees
    return text in roots or text.startswith(prefixes)


def default_denied(home: Path) -> DeniedDirectories:
    """The denied directories for a machine whose home directory is `home` (canonical)."""
    exact = {Path(p) for p in _DENIED_EXACT} | {home}
    return DeniedDirectories(
        exact=frozenset(exact),
        trees=tuple(Path(p) for p in _DENIED_TREES),
        cwd_only_trees=tuple(home / p for p in _CACHE_TREES_UNDER_HOME),
    )


@dataclass(frozen=True)
class WorkspaceGuard:
    """The server's side of the security model: allowlist and denied directories.

    `allow_roots` empty means no allowlist (stdio: the local user may name any project).
    """

    denied: DeniedDirectories
    allow_roots: tuple[Path, ...] = field(default=())

    def project_root(self, directory: Path, client_roots: Sequence[Path] = ()) -> tuple[Path, str]:
        """The project root for canonical `directory`, and a sentence saying why."""
        chain = self._candidates(directory, tuple(client_roots))
        for candidate in chain:
            if (candidate / ".homeport").is_dir():
                return candidate, _why(directory, candidate, "holds .homeport/")
        for candidate in chain:
            if (candidate / ".git").exists():
                return candidate, _why(directory, candidate, "is a git repository")
        return directory, f"{directory} has no .homeport/ or git repository above it, so it is its own root"

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - guards live as long as the process; pure, bounded
    def _candidates(self, directory: Path, client_roots: tuple[Path, ...]) -> tuple[Path, ...]:
        """`directory` and its ancestors up to the root that bounds the search, denied ones left out."""
        ceiling = within_any(directory, [*self.allow_roots, *client_roots])
        chain = [directory, *directory.parents]
        if ceiling is not None:
            chain = chain[: chain.index(ceiling) + 1]
        return tuple(p for p in chain if self.denied.reason(p) is None)

    def check(self, root: Path, client_roots: Sequence[Path] | None, *, label: str) -> None:
        """Refuse a workspace root that lies outside the allowed or client roots, or is denied.

        Raises:
            WorkspaceDeniedError: naming `label` (the source and value) and what to do instead.
        """
        why = self.denied.reason(root)
        if why is not None:
            raise WorkspaceDeniedError(f"workspace {label} is refused: {why}; pass a project directory instead")
        if self.allow_roots and within_any(root, self.allow_roots) is None:
            allowed = ", ".join(str(p) for p in self.allow_roots)
            raise WorkspaceDeniedError(
                f"workspace {label} resolves to {root}, outside the allowed roots {allowed}; pass a "
                "workspace inside one of them or start the server with --allow-root"
            )
        if client_roots is not None and within_any(root, client_roots) is None:
            declared = ", ".join(str(p) for p in client_roots) or "(none)"
            raise WorkspaceDeniedError(
                f"workspace {label} resolves to {root}, outside the client's roots {declared}; pass a "
                "workspace inside one of the roots your client declared"
            )


def _why(directory: Path, root: Path, what: str) -> str:
    if directory == root:
        return f"{root} {what}"
    return f"{directory} lies inside {root}, which {what}"
