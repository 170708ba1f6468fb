"""The file-area executor: safe paths and atomic writes inside one agent's or team's area.

An area is ``<data_dir>/organizations/{org}/workspaces/{folder_id}/{scope}``. Nothing here asks
who is calling: the policy layer decides first, and other code may call these functions under
other rules. Every function takes the area explicitly and never parses ids out of a path.

The guarantees, whoever calls:

- a path is relative, uses ``/``, has no ``..``, NUL, control characters or backslashes; a
  written path is at most `MAX_PATH_BYTES` and each name at most `MAX_NAME_BYTES`;
- nothing is opened by a path string: the area is opened from the data directory with
  ``O_NOFOLLOW`` at every component and everything below it relative to its parent's descriptor
  (`homeport.files._dirfd`), so a directory or file swapped for a symlink at any moment is
  refused, never followed out of the area;
- reads follow symlinks only while they stay inside the area (each link is read and resolved
  from the area's descriptor); writes and deletes never go through a symlink, and a file is
  replaced by ``rename`` of a temp file written beside it;
- listing works on whatever is on disk, however deep, and never descends into a symlink;
- content is capped (`DEFAULT_MAX_BYTES` unless the caller passes ``max_bytes``).

POSIX only: it relies on ``dir_fd`` and ``O_NOFOLLOW``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from homeport.errors import FileAreaError
from homeport.files._dirfd import (
    DIR_FLAGS,
    FILE_FLAGS,
    Location,
    area_descriptor,
    area_roots,
    changed_message,
    locate,
    open_area,
)
from homeport.files._paths import (
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    PathLike,
    area_exists,
    area_root,
    check_path_length,
    describe_area,
    parts_of,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "area_exists",
    "area_root",
    "delete_file",
    "file_info",
    "list_folder_entries",
    "read_file",
    "resolve_path",
    "write_file",
]

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
_TEMP_PREFIX = ".homeport-"


@contextlib.contextmanager
def _os_errors(action: str, path: str, where: str) -> Iterator[None]:
    """Translate OS errors at the boundary into messages that name the path and the fix."""
    try:
        yield
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise FileAreaError(f"{path!r} does not exist in {where}; list the folder to see what is there") from exc
    except PermissionError as exc:
        raise FileAreaError(f"cannot {action} {path!r} in {where}: the server has no permission on disk") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileAreaError(changed_message(path, where)) from exc
        raise FileAreaError(f"cannot {action} {path!r} in {where}: {exc.strerror or exc}") from exc


@contextlib.contextmanager
def _located(
    data_dir: PathLike, org: str, folder_id: str, scope: str, parts: tuple[str, ...], path: str
) -> Iterator[Location]:
    """Where `parts` leads in an existing area (symlinks inside it followed); closed afterwards."""
    where = describe_area(org, folder_id, scope)
    with area_descriptor(data_dir, org, folder_id, scope, create=False) as area_fd:
        place = locate(area_fd, parts, roots=area_roots(data_dir, org, folder_id, scope), path=path, where=where)
    try:
        yield place
    finally:
        place.close()


def resolve_path(
    data_dir: PathLike, org: str, folder_id: str, scope: str, path: str, *, allow_empty: bool = False
) -> Path:
    """Where `path` leads in the area (symlinks inside it followed), checked to stay inside it.

    The answer is a name for messages and tests; the operations never open it by this name.

    Raises:
        FileAreaError: the path is malformed, or leads (through a symlink) outside the area.
    """
    parts = parts_of(path, allow_empty=allow_empty)
    root = area_root(data_dir, org, folder_id, scope)
    area_fd = open_area(data_dir, org, folder_id, scope, create=False)
    if area_fd is None:
        return root.joinpath(*parts)
    try:
        where = describe_area(org, folder_id, scope)
        place = locate(
            area_fd, parts, roots=area_roots(data_dir, org, folder_id, scope), path=path, where=where, strict=False
        )
        place.close()
    finally:
        os.close(area_fd)
    return root.joinpath(*place.parts)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _too_large(size: int, max_bytes: int, path: str) -> FileAreaError:
    return FileAreaError(
        f"{path!r} is {size:,} bytes, over the {max_bytes:,}-byte cap for file areas; split it into smaller files"
    )


def _open_parents(area_fd: int, parents: tuple[str, ...], *, create: bool, path: str, where: str) -> int:
    """A descriptor of the file's directory, reached from the area without following any symlink."""
    fd = os.dup(area_fd)
    try:
        for name in parents:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=fd)
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                if stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode):
                    why = "a symlink; Homeport never writes or deletes through symlinks"
                else:
                    why = "a file, not a folder"
                raise FileAreaError(f"path {path!r} in {where} goes through {name!r}, which is {why}") from exc
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _refuse_link_or_dir(dir_fd: int, name: str, path: str, where: str) -> bool:
    """True when `name` exists as a regular file; raises for a symlink or a directory."""
    try:
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(mode):
        raise FileAreaError(f"{path!r} in {where} is a symlink; Homeport never writes through symlinks")
    if stat.S_ISDIR(mode):
        raise FileAreaError(f"{path!r} in {where} is a folder; pass the path of a file inside it")
    return True


def _encode(content: str | bytes, encoding: str, path: str) -> bytes:
    if isinstance(content, bytes):
        return content
    if encoding == "base64":
        try:
            return base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise FileAreaError(f"content for {path!r} is not valid base64 ({exc}); encode the bytes again") from exc
    if encoding != "utf-8":
        raise FileAreaError(f"encoding {encoding!r} is not one of: utf-8, base64")
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FileAreaError(f"content for {path!r} is not valid Unicode ({exc.reason}); send base64") from exc


def write_file(
    data_dir: PathLike,
    org: str,
    folder_id: str,
    scope: str,
    path: str,
    content: str | bytes,
    *,
    encoding: str = "utf-8",
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
    """Create or replace a file atomically, creating the area and parent folders as needed.

    `content` is text written as UTF-8, base64 text when `encoding` is ``"base64"``, or bytes.
    Returns ``{path, size, sha256, modified, created}``.

    Raises:
        FileAreaError: bad path, content over `max_bytes`, a symlink or folder in the way, or
            an OS error (named).
    """
    parts = parts_of(path, allow_empty=False)
    check_path_length(parts, path)
    data = _encode(content, encoding, path)
    if len(data) > max_bytes:
        raise _too_large(len(data), max_bytes, path)
    where = describe_area(org, folder_id, scope)
    name = parts[-1]
    with _os_errors("write", path, where):
        with area_descriptor(data_dir, org, folder_id, scope, create=True) as area_fd:
            dir_fd = _open_parents(area_fd, parts[:-1], create=True, path=path, where=where)
        try:
            existed = _refuse_link_or_dir(dir_fd, name, path, where)
            # A short temp name: the target's own name may already be near the 255-byte limit.
            temp = f"{_TEMP_PREFIX}{secrets.token_hex(8)}.tmp"
            fd = os.open(
                temp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o644,
                dir_fd=dir_fd,
            )
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                # rename() replaces a name, never writes through it, so a symlink swapped in
                # after the check above is replaced, not followed.
                os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
                raise
            modified = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mtime
        finally:
            os.close(dir_fd)
    return {
        "path": "/".join(parts),
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "modified": _iso(modified),
        "created": not existed,
    }


def read_file(
    data_dir: PathLike, org: str, folder_id: str, scope: str, path: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> dict[str, Any]:
    """Read a file: UTF-8 text as is, anything else as base64.

    Returns ``{path, content, encoding ("utf-8" | "base64"), size, sha256, modified}``.

    Raises:
        FileAreaError: bad path, outside the area, missing, a folder, or over `max_bytes`.
    """
    parts = parts_of(path, allow_empty=False)
    where = describe_area(org, folder_id, scope)
    with _os_errors("read", path, where), _located(data_dir, org, folder_id, scope, parts, path) as place:
        if place.name is None:
            raise FileAreaError(f"{path!r} in {where} is a folder; list it, or pass the path of a file inside it")
        fd = os.open(place.name, FILE_FLAGS, dir_fd=place.dir_fd)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise FileAreaError(f"{path!r} in {where} is a folder; list it, or pass the path of a file inside it")
            if not stat.S_ISREG(info.st_mode):
                raise FileAreaError(f"{path!r} in {where} is not a regular file")
            if info.st_size > max_bytes:
                raise _too_large(info.st_size, max_bytes, path)
            data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:  # the file grew while being read
        raise _too_large(len(data), max_bytes, path)
    try:
        content, encoding = data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        content, encoding = base64.b64encode(data).decode("ascii"), "base64"
    return {
        "path": "/".join(parts),
        "content": content,
        "encoding": encoding,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "modified": _iso(info.st_mtime),
    }


def delete_file(data_dir: PathLike, org: str, folder_id: str, scope: str, path: str) -> dict[str, Any]:
    """Delete a file, or an empty folder. Returns ``{path, deleted: True, was_dir}``.

    Raises:
        FileAreaError: bad path, missing, a symlink (on the way or the target), or a folder
            that is not empty.
    """
    parts = parts_of(path, allow_empty=False)
    where = describe_area(org, folder_id, scope)
    name = parts[-1]
    with _os_errors("delete", path, where):
        with area_descriptor(data_dir, org, folder_id, scope, create=False) as area_fd:
            dir_fd = _open_parents(area_fd, parts[:-1], create=False, path=path, where=where)
        try:
            mode = os.lstat(name, dir_fd=dir_fd).st_mode
            if stat.S_ISLNK(mode):
                raise FileAreaError(f"{path!r} in {where} is a symlink; Homeport does not change symlinks")
            if stat.S_ISDIR(mode):
                try:
                    os.rmdir(name, dir_fd=dir_fd)
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                        raise
                    raise FileAreaError(f"folder {path!r} in {where} is not empty; delete its files first") from exc
            else:
                os.unlink(name, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
    return {"path": "/".join(parts), "deleted": True, "was_dir": stat.S_ISDIR(mode)}


def file_info(data_dir: PathLike, org: str, folder_id: str, scope: str, path: str) -> dict[str, Any]:
    """``{path, size, modified (ISO 8601 UTC), sha256 (None for folders), is_dir}``; "" is the area.

    Raises:
        FileAreaError: bad path, outside the area, or missing.
    """
    parts = parts_of(path, allow_empty=True)
    where = describe_area(org, folder_id, scope)
    with _os_errors("inspect", path, where), _located(data_dir, org, folder_id, scope, parts, path) as place:
        if place.name is None:
            info = os.fstat(place.dir_fd)
            digest = None
        else:
            fd = os.open(place.name, FILE_FLAGS, dir_fd=place.dir_fd)
            info = os.fstat(fd)
            digest = None
            if not stat.S_ISREG(info.st_mode):
                os.close(fd)
            else:
                with os.fdopen(fd, "rb") as handle:
                    sha = hashlib.sha256()
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        sha.update(chunk)
                    digest = sha.hexdigest()
    return {
        "path": "/".join(parts),
        "size": info.st_size,
        "modified": _iso(info.st_mtime),
        "sha256": digest,
        "is_dir": stat.S_ISDIR(info.st_mode),
    }


def list_folder_entries(
    data_dir: PathLike, org: str, folder_id: str, scope: str, path: str = "", *, recursive: bool = False
) -> list[dict[str, Any]]:
    """Entries under `path` ("" is the area), sorted by path, each
    ``{name, path, is_dir, is_symlink, size, modified}``. An area not created yet is empty.

    Raises:
        FileAreaError: bad path, outside the area, missing, or not a folder.
    """
    parts = parts_of(path, allow_empty=True)
    where = describe_area(org, folder_id, scope)
    with _os_errors("list", path, where):
        area_fd = open_area(data_dir, org, folder_id, scope, create=False)
    if area_fd is None and not parts:
        return []  # an area not created yet
    if area_fd is not None:
        os.close(area_fd)
    with _os_errors("list", path, where), _located(data_dir, org, folder_id, scope, parts, path) as place:
        if place.name is None:
            top = os.dup(place.dir_fd)
        else:
            try:
                top = os.open(place.name, DIR_FLAGS, dir_fd=place.dir_fd)
            except NotADirectoryError:
                raise FileAreaError(
                    f"{path!r} in {where} is a file, not a folder; read it, or list its parent folder"
                ) from None
        prefix = "".join(p + "/" for p in place.parts)
    return sorted(_walk(top, prefix, recursive), key=lambda e: e["path"])


def _scan(fd: int) -> list[tuple[str, os.stat_result]]:
    """Names and lstat of one directory; entries that vanish meanwhile are left out."""
    found = []
    with os.scandir(fd) as scan:
        for entry in scan:
            if entry.name.startswith(_TEMP_PREFIX):
                continue  # an in-flight write, not a file yet
            try:
                found.append((entry.name, entry.stat(follow_symlinks=False)))
            except OSError:
                continue
    return found


def _walk(top: int, prefix: str, recursive: bool) -> list[dict[str, Any]]:
    """Entries under the directory `top` (closed here), depth first, by descriptors only.

    Never fails on what is on disk: a folder that vanishes, turns into a symlink, cannot be opened
    or needs more descriptors than the process has is listed but not descended into.
    """
    entries: list[dict[str, Any]] = []
    try:
        frames = [(top, prefix, iter(_scan(top)))]
    except BaseException:
        os.close(top)
        raise
    try:
        while frames:
            fd, here, pending = frames[-1]
            item = next(pending, None)
            if item is None:
                os.close(fd)
                frames.pop()
                continue
            name, info = item
            is_dir = stat.S_ISDIR(info.st_mode)
            entries.append(
                {
                    "name": name,
                    "path": here + name,
                    "is_dir": is_dir,
                    "is_symlink": stat.S_ISLNK(info.st_mode),
                    "size": info.st_size,
                    "modified": _iso(info.st_mtime),
                }
            )
            if recursive and is_dir:
                try:
                    child = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue
                try:
                    frames.append((child, f"{here}{name}/", iter(_scan(child))))
                except OSError:
                    os.close(child)
    except BaseException:
        for fd, _, _ in frames:
            os.close(fd)
        raise
    return entries
