"""Which canonical directories may become workspaces, and where a project's root is.

The guard answers two questions for a canonical directory: which ancestor is its project root
(the nearest one that holds `.homeport/` or is a git repository root, whichever comes first walking
up, else the directory itself), and is that root allowed (inside the server's allowlist, inside
the client's declared roots, not a denied directory, not Homeport's own data). The ancestor
search never climbs above the allowed root or client root that contains the directory, and never
settles on a denied directory, so a dotfiles repository in the home directory cannot swallow
every project, and a `.homeport/` in a parent never captures a nested repository.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from homeport.errors import WorkspaceDeniedError
from homeport.workspace.paths import within_any

__all__ = ["DeniedDirectories", "ProjectRoot", "WorkspaceGuard", "default_denied"]

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
class ProjectRoot:
    """Where a directory's workspace is rooted, whether that root is a project, and why."""

    path: Path
    is_project: bool
    why: str


@dataclass(frozen=True)
class WorkspaceGuard:
    """The server's side of the security model: allowlist, denied directories, Homeport's own data.

    `allow_roots` empty means no allowlist (stdio: the local user may name any project).
    `private_trees` are Homeport's own data (file areas, tokens): never a workspace, whatever
    the allowlist says, so no memory or database tool can reach into them.
    """

    denied: DeniedDirectories
    allow_roots: tuple[Path, ...] = field(default=())
    private_trees: tuple[Path, ...] = field(default=())

    def project_root(self, directory: Path, client_roots: Sequence[Path] = ()) -> ProjectRoot:
        """The nearest project at or above canonical `directory`: the first that holds `.homeport/` or
        is a git repository root, walking up, never above the allowed or client root containing it.

        Raises:
            WorkspaceDeniedError: the nearest `.homeport` is a symlink or not a directory (a cloned
                repository could point the store into another workspace or out of the allowed root).
        """
        for candidate in self._candidates(directory, tuple(client_roots)):
            marker = candidate / STORE_DIRNAME
            try:
                mode = os.lstat(marker).st_mode
            except FileNotFoundError:
                mode = None
            if mode is not None:
                if stat.S_ISDIR(mode):
                    return ProjectRoot(candidate, True, _why(directory, candidate, "holds .homeport/"))
                kind = "a symlink" if stat.S_ISLNK(mode) else "not a directory"
                raise WorkspaceDeniedError(
                    f"{marker} is {kind}; Homeport never follows it, since it could put this project's memory "
                    "in another project or outside the allowed roots. Remove it (a real .homeport/ directory is "
                    "created on the first write)"
                )
            if os.path.lexists(candidate / ".git"):
                return ProjectRoot(candidate, True, _why(directory, candidate, "is a git repository"))
        return ProjectRoot(
            directory, False, f"{directory} has no .homeport/ or git repository above it, so it is its own root"
        )

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - guards live as long as the process; pure, bounded
    def _candidates(self, directory: Path, client_roots: tuple[Path, ...]) -> tuple[Path, ...]:
        """`directory` and its ancestors up to the root that bounds the search, denied ones left out."""
        ceiling = within_any(directory, [*self.allow_roots, *client_roots])
        chain = [directory, *directory.parents]
        if ceiling is not None:
            chain = chain[: chain.index(ceiling) + 1]
        return tuple(p for p in chain if self.denied.reason(p) is None)

    def check_reach(self, candidate: Path, client_roots: Sequence[Path] | None, *, label: str) -> None:
        """Refuse a decoded candidate that cannot lie inside the caller's bounds, before anything says
        whether it exists or what it is: outside the allowed or client roots, or in a denied or private
        tree, a file, a directory and nothing at all get the same answer (no probing the server's disk).
        Inside them the caller may learn what is there, as it would by using it; `check` then decides
        on the project root, as before.

        The place is the candidate with the symlinks that exist followed and `..` taken from there on
        (non-strict realpath): where a strict one would land whenever there is something to land on.

        Raises:
            WorkspaceDeniedError: naming `label` (the value as given), never what lies at it.
        """
        where = Path(os.path.realpath(candidate))
        self._within_roots(where, client_roots, label)
        if self.denied.reason(where) is not None:
            said = self.denied.reason(Path(os.path.normpath(candidate)))  # in the caller's own words
            raise WorkspaceDeniedError(
                f"workspace {label} is refused: {said or 'it lies in a system or home directory'}; pass a "
                "project directory instead"
            )
        private = within_any(where, self.private_trees)
        if private is not None:
            raise WorkspaceDeniedError(
                f"workspace {label} lies inside Homeport's data directory {private} (file areas and tokens), "
                "which is never a workspace; pass a project directory"
            )

    def check(self, root: Path, client_roots: Sequence[Path] | None, *, label: str) -> None:
        """Refuse a workspace root that lies outside the allowed or client roots, is denied, or is
        Homeport's own data. `client_roots` None: the client declared none (no bound); empty: it
        declared some and none is a local directory (nothing is inside them).

        Raises:
            WorkspaceDeniedError: naming `label` (the source and value) and what to do instead.
        """
        why = self.denied.reason(root)
        if why is not None:
            raise WorkspaceDeniedError(f"workspace {label} is refused: {why}; pass a project directory instead")
        private = within_any(root, self.private_trees)
        if private is not None:
            raise WorkspaceDeniedError(
                f"workspace {label} resolves to {root}, inside Homeport's data directory {private} (file areas "
                "and tokens), which is never a workspace; pass a project directory"
            )
        self._within_roots(root, client_roots, label, resolved=root)

    def _within_roots(
        self, place: Path, client_roots: Sequence[Path] | None, label: str, *, resolved: Path | None = None
    ) -> None:
        """Refuse `place` outside the allowed roots or the client's; the message names `label`, and the root
        it `resolved` to when the value was resolved first.

        Raises:
            WorkspaceDeniedError: naming which roots it lies outside and what to do instead.
        """
        said = f"workspace {label} resolves to {resolved}," if resolved is not None else f"workspace {label} is"
        if self.allow_roots and within_any(place, self.allow_roots) is None:
            allowed = ", ".join(str(p) for p in self.allow_roots)
            raise WorkspaceDeniedError(
                f"{said} outside the allowed roots {allowed}; pass a workspace inside one of them or start the "
                "server with --allow-root"
            )
        if client_roots is not None and within_any(place, client_roots) is None:
            if not client_roots:
                raise WorkspaceDeniedError(
                    f"workspace {label} is refused: the client declared roots, and none of them is a directory on this "
                    "machine, so no workspace lies inside them; open a local folder in the client"
                )
            declared = ", ".join(str(p) for p in client_roots)
            raise WorkspaceDeniedError(
                f"{said} outside the client's roots {declared}; pass a workspace inside one of the roots your "
                "client declared, or add the folder to the client's roots"
            )

    def projects_below(self, root: Path) -> list[Path]:
        """Projects inside `root` (not `root` itself), up to `_SCAN_DEPTH` levels down, symlinks not followed.

        Raises:
            WorkspaceDeniedError: `root` has too many directories to tell (it is not a project folder).
        """
        found: list[Path] = []
        seen = 0
        for dirpath, dirnames, _ in os.walk(root):
            here = Path(dirpath)
            depth = len(here.parts) - len(root.parts)
            if depth and (os.path.lexists(here / STORE_DIRNAME) or os.path.lexists(here / ".git")):
                found.append(here)
                dirnames[:] = []
                if len(found) >= _SCAN_REPORT:
                    break
                continue
            seen += len(dirnames)
            if seen > _SCAN_BUDGET:
                raise WorkspaceDeniedError(
                    f"{root} is not a project (no .homeport/ or git repository) and holds over {_SCAN_BUDGET} "
                    "directories; if it is one project, create .homeport/ in it or run git init, else pass one of "
                    "the projects inside it"
                )
            dirnames[:] = [d for d in dirnames if d not in _SCAN_SKIP] if depth < _SCAN_DEPTH else []
        return found


STORE_DIRNAME = ".homeport"
_SCAN_DEPTH = 3
_SCAN_REPORT = 10
_SCAN_BUDGET = 5000
_SCAN_SKIP = frozenset({".git", STORE_DIRNAME, "node_modules", "__pycache__", ".venv", "venv"})


def _why(directory: Path, root: Path, what: str) -> str:
    if directory == root:
        return f"{root} {what}"
    return f"{directory} lies inside {root}, which {what}"
