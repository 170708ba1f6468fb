"""HEAD, refs and the default branch, read from a repository's files: no git process, no config run.

Every write of memory asks where it is made (`location_of`) and every filtered read asks what the
reader's HEAD and the default branch point at, so this is a few reads of small files: the
worktree's `.git` (a directory, or a file naming the worktree's git directory, whose `commondir`
leads to the refs every worktree of the clone shares), `HEAD`, a loose ref or `packed-refs` (parsed
once per change of the file). A repository's files may be hostile (a cloned project): nothing here
executes anything, a file that is not a regular file is not read, and reads are bounded.

The default branch: what `refs/remotes/origin/HEAD` names (a clone sets it from the remote),
else `main`, else `master` (existing, or the unborn branch HEAD names), else the project's
configured one (`[branches] default` in `.homeport/config.toml`, passed in by the caller).
"""

from __future__ import annotations

import os
import re
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Head", "Location", "Repository", "default_branch", "find_repository", "location_of", "resolve"]

_OBJECT_ID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_MAX_SMALL = 4096  # HEAD, a loose ref, a .git file, commondir
_MAX_PACKED = 64 * 1024 * 1024
_PER_WORKTREE = ("HEAD", "refs/bisect/", "refs/worktree/", "refs/rewritten/")


@dataclass(frozen=True)
class Repository:
    """One work tree of a repository: its directory, its own git directory, and the shared one."""

    worktree: Path
    git_dir: Path
    common_dir: Path


@dataclass(frozen=True)
class Head:
    """What HEAD names: a branch (None when detached) and its commit (None before the first commit)."""

    branch: str | None
    commit: str | None


@dataclass(frozen=True)
class Location:
    """Where a write was made: branch (None when detached), HEAD commit (None before the first), work tree."""

    branch: str | None
    commit: str | None
    worktree: str
    default_branch: str | None

    @property
    def on_default_branch(self) -> bool:
        return self.branch is not None and self.branch == self.default_branch


def find_repository(root: Path) -> Repository | None:
    """The repository whose work tree is `root` (its `.git` a directory or a `gitdir:` file), else None."""
    dot_git = root / ".git"
    try:
        mode = os.lstat(dot_git).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        git_dir = dot_git
    elif stat.S_ISREG(mode):
        text = _small(dot_git)
        if text is None or not text.startswith("gitdir:"):
            return None
        git_dir = root / text[len("gitdir:") :].strip()  # an absolute path stays absolute
    else:
        return None
    common = git_dir
    pointer = _small(git_dir / "commondir")
    if pointer:
        common = git_dir / pointer.strip()
    if not (common / "objects").is_dir():
        return None
    return Repository(root, git_dir, common)


def read_head(repo: Repository) -> Head:
    text = _small(repo.git_dir / "HEAD")
    if text is None:
        return Head(None, None)
    text = text.strip()
    if text.startswith("ref:"):
        name = text[4:].strip()
        branch = name[len("refs/heads/") :] if name.startswith("refs/heads/") else None
        return Head(branch, resolve(repo, name))
    return Head(None, text if _OBJECT_ID.match(text) else None)


def resolve(repo: Repository, name: str, depth: int = 0) -> str | None:
    """The commit id a full ref name (`refs/heads/main`) points at, following symbolic refs; None if absent."""
    if depth > 5:
        return None
    text = _small(_ref_path(repo, name))
    if text is not None:
        text = text.strip()
        if text.startswith("ref:"):
            return resolve(repo, text[4:].strip(), depth + 1)
        return text if _OBJECT_ID.match(text) else None
    return _packed(repo.common_dir).get(name)


def symbolic_target(repo: Repository, name: str) -> str | None:
    """The ref a symbolic ref names (`refs/remotes/origin/HEAD` -> `refs/remotes/origin/main`), else None."""
    text = _small(_ref_path(repo, name))
    if text is None or not text.startswith("ref:"):
        return None
    return text[4:].strip()


def default_branch(repo: Repository, head: Head | None = None, configured: str | None = None) -> str | None:
    """The default branch's short name (see the module's docstring), or None when nothing names one."""
    target = symbolic_target(repo, "refs/remotes/origin/HEAD")
    prefix = "refs/remotes/origin/"
    if target is not None and target.startswith(prefix) and len(target) > len(prefix):
        return target[len(prefix) :]
    for name in ("main", "master"):
        if resolve(repo, f"refs/heads/{name}") is not None:
            return name
    head = head or read_head(repo)
    if head.commit is None and head.branch in ("main", "master"):
        return head.branch
    return configured or None


def branch_tip(repo: Repository, branch: str) -> str | None:
    """The commit of a local branch, else of `origin`'s branch of that name (kept after a forge deletes it)."""
    return resolve(repo, f"refs/heads/{branch}") or resolve(repo, f"refs/remotes/origin/{branch}")


def location_of(root: Path, configured_default: str | None = None) -> Location | None:
    """Where a write at `root` is made, or None when `root` is not a git work tree."""
    repo = find_repository(root)
    if repo is None:
        return None
    head = read_head(repo)
    return Location(head.branch, head.commit, str(root), default_branch(repo, head, configured_default))


def _ref_path(repo: Repository, name: str) -> Path:
    if ".." in name.split("/") or name.startswith("/"):
        return repo.git_dir / "nonexistent"
    base = repo.git_dir if name == "HEAD" or name.startswith(_PER_WORKTREE) else repo.common_dir
    return base / name


def _small(path: Path) -> str | None:
    data = _read_regular(path, _MAX_SMALL)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _read_regular(path: Path, limit: int) -> bytes | None:
    """The file's bytes if it is a regular file (a FIFO or a device would block or never end), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return os.read(fd, limit + 1)[:limit]
    except OSError:
        return None
    finally:
        os.close(fd)


_packed_cache: dict[Path, tuple[tuple[int, int, int], dict[str, str]]] = {}
_packed_lock = threading.Lock()


def _packed(common_dir: Path) -> dict[str, str]:
    """`packed-refs` as {ref name: commit id}, parsed again only when the file changes."""
    path = common_dir / "packed-refs"
    try:
        info = os.stat(path)
    except OSError:
        return {}
    key = (info.st_mtime_ns, info.st_size, info.st_ino)
    cached = _packed_cache.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    data = _read_regular(path, _MAX_PACKED)
    refs: dict[str, str] = {}
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        if not line or line[0] in "#^":
            continue
        oid, _, name = line.partition(" ")
        if _OBJECT_ID.match(oid) and name:
            refs[name.strip()] = oid
    with _packed_lock:
        if len(_packed_cache) > 256:
            _packed_cache.clear()
        _packed_cache[path] = (key, refs)
    return refs
