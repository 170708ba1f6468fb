"""Reaching things inside an area through directory descriptors, never through a path string.

Private to `homeport.files`. Why descriptors: a check on a path (``realpath``, then ``open``) and
the use of that path are two moments, and a directory swapped for a symlink between them sends the
use elsewhere. Here the area is opened from the data directory one component at a time with
``O_NOFOLLOW``, and everything below it is opened relative to its parent's descriptor, so whatever
changes on disk meanwhile, what is opened was reached from the area without leaving it.

Symlinks inside an area are followed for reading when they stay inside it: `locate` reads each
link itself (``readlink``) and continues from the area's descriptor, so a link that leads out, to
another area, or that is swapped in midway, is refused rather than followed. Paths handed to the
OS are single names, so a tree deeper than ``PATH_MAX`` on disk is still reachable.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from homeport.errors import FileAreaError
from homeport.files._paths import PathLike, area_root, describe_area

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Reads never block on a FIFO someone left in an area, and never follow a final symlink.
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
MAX_SYMLINK_HOPS = 40  # what Linux allows in one path lookup
_AREA_PARTS = ("organizations", "{org}", "workspaces", "{folder_id}", "{scope}")


def open_area(data_dir: PathLike, org: str, folder_id: str, scope: str, *, create: bool) -> int | None:
    """A descriptor of the area's directory (the caller closes it), or None if it does not exist.

    The data directory is the operator's; below it every component is opened with
    ``O_NOFOLLOW``, created first when `create`.

    Raises:
        FileAreaError: bad ids or scope, or a component of the area is a symlink or a file.
        OSError: anything else from the OS (callers translate it).
    """
    root = area_root(data_dir, org, folder_id, scope)  # validates the ids and the scope
    base = os.path.realpath(data_dir)
    if create:
        os.makedirs(base, exist_ok=True)
    try:
        fd = os.open(base, DIR_FLAGS)
    except FileNotFoundError:
        return None
    try:
        for name in (n.format(org=org, folder_id=folder_id, scope=scope) for n in _AREA_PARTS):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=fd)
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                os.close(fd)
                return None
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                raise FileAreaError(
                    f"{describe_area(org, folder_id, scope)} is reached through a symlink (or a file) on disk at "
                    f"{root}; file areas must be real directories under the data directory, ask an operator to fix it"
                ) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def area_descriptor(data_dir: PathLike, org: str, folder_id: str, scope: str, *, create: bool) -> Iterator[int]:
    """`open_area` that must find the area; closes the descriptor afterwards.

    Raises:
        FileNotFoundError: the area does not exist (and `create` is false).
    """
    fd = open_area(data_dir, org, folder_id, scope, create=create)
    if fd is None:
        raise FileNotFoundError(errno.ENOENT, "the area does not exist yet")
    try:
        yield fd
    finally:
        os.close(fd)


@dataclass
class Location:
    """Where a caller's path leads inside an area.

    `dir_fd` is the directory that holds `name`, or the place itself when `name` is None (the path
    led to the area or to a folder through a symlink or '.'); the caller closes it. `parts` are the
    real components from the area's directory. `exists` is False when a component was missing: then
    `dir_fd` is -1 and `parts` was completed by name only.
    """

    dir_fd: int
    name: str | None
    parts: tuple[str, ...]
    exists: bool = True

    def close(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1


def locate(
    area_fd: int,
    parts: tuple[str, ...],
    *,
    roots: tuple[Path, ...],
    path: str,
    where: str,
    strict: bool = True,
) -> Location:
    """Follow `parts` from the area, through symlinks that stay inside it.

    `roots` are the absolute names of the area's directory (as configured and with symlinks
    resolved), to recognise absolute link targets that point back into it. The last component need
    not exist. With `strict`, a missing folder on the way raises; without, the rest is completed by
    name (`Location.exists` is then False).

    Raises:
        FileAreaError: a symlink leads outside the area, or too many symlinks.
        FileNotFoundError, NotADirectoryError: a folder on the way is missing or a file (`strict`).
    """
    dirs = [os.dup(area_fd)]
    stack: list[str] = []
    pending = list(parts)
    hops = 0
    final: str | None = None
    try:
        while pending:
            name = pending.pop(0)
            final = None
            if name in ("", "."):
                continue
            if name == "..":
                if not stack:
                    raise _outside(path, where)
                stack.pop()
                os.close(dirs.pop())
                continue
            try:
                mode: int | None = os.lstat(name, dir_fd=dirs[-1]).st_mode
            except FileNotFoundError:
                mode = None
            if mode is not None and stat.S_ISLNK(mode):
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise FileAreaError(f"path {path!r} in {where} goes through too many symlinks (a loop?)")
                target = os.readlink(name, dir_fd=dirs[-1])
                if target.startswith("/"):
                    inside = _inside(target, roots)
                    if inside is None:
                        raise _outside(path, where)
                    for fd in dirs[1:]:
                        os.close(fd)
                    del dirs[1:]
                    stack.clear()
                    pending[:0] = inside
                else:
                    pending[:0] = target.split("/")
                continue
            if not pending:
                final = name
                break
            if mode is None and not strict:
                return _by_name(dirs, [*stack, name], pending, path, where)
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=dirs[-1])
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # swapped for a symlink since the lstat above
                    raise FileAreaError(changed_message(path, where)) from None
                if strict or not isinstance(exc, (FileNotFoundError, NotADirectoryError)):
                    raise
                return _by_name(dirs, [*stack, name], pending, path, where)
            dirs.append(child)
            stack.append(name)
    except BaseException:
        for fd in dirs:
            os.close(fd)
        raise
    here = dirs.pop()
    for fd in dirs:
        os.close(fd)
    if final is None:
        return Location(here, None, tuple(stack))
    return Location(here, final, (*stack, final))


def _by_name(dirs: list[int], stack: list[str], pending: list[str], path: str, where: str) -> Location:
    """The rest of a path below a missing folder: nothing there to follow, so names only."""
    for fd in dirs:
        os.close(fd)
    dirs.clear()
    for name in pending:
        if name == "..":
            if not stack:
                raise _outside(path, where)
            stack.pop()
        elif name not in ("", "."):
            stack.append(name)
    return Location(-1, stack[-1] if stack else None, tuple(stack), exists=False)


def _inside(target: str, roots: tuple[Path, ...]) -> list[str] | None:
    """The components of an absolute link target below the area, or None when it points elsewhere."""
    for candidate in (PurePosixPath(os.path.normpath(target)), PurePosixPath(os.path.realpath(target))):
        for root in roots:
            if candidate.is_relative_to(root):
                return list(candidate.relative_to(root).parts)
    return None


def _outside(path: str, where: str) -> FileAreaError:
    return FileAreaError(
        f"path {path!r} in {where} leads outside the folder through a symlink; Homeport does not follow it"
    )


def changed_message(path: str, where: str) -> str:
    return (
        f"path {path!r} in {where} was changed into a symlink while Homeport used it; it was not followed, "
        "retry once the folder is stable"
    )


def area_roots(data_dir: PathLike, org: str, folder_id: str, scope: str) -> tuple[Path, ...]:
    """The absolute names of an area's directory: as configured, and with the data dir's symlinks resolved."""
    nominal = Path(os.path.abspath(area_root(data_dir, org, folder_id, scope)))
    real = Path(os.path.realpath(data_dir)).joinpath(*nominal.parts[-5:])
    return (nominal,) if nominal == real else (nominal, real)
