"""The file-area executor: safe paths and atomic writes inside one agent's or team's area.

An area is ``<data_dir>/organizations/{org}/workspaces/{folder_id}/{scope}``. Nothing here asks
who is calling: the policy layer decides first, and other code may call these functions under
other rules. Every function takes the area explicitly and never parses ids out of a path.

The guarantees, whoever calls:

- a path is relative, uses ``/``, has no ``..``, NUL, control characters or backslashes;
- what it resolves to (after symlinks) stays inside the area, compared by path components;
- writes and deletes never go through a symlink: directories are walked one component at a
  time with ``O_NOFOLLOW`` relative to the parent's descriptor, so a symlink swapped in midway
  is refused too, and the file itself is replaced by ``rename`` of a temp file written beside it;
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
from homeport.files._paths import (
    PathLike,
    area_exists,
    area_root,
    checked_root,
    describe_area,
    parts_of,
    resolve_path,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
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
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


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
        raise FileAreaError(f"cannot {action} {path!r} in {where}: {exc.strerror or exc}") from exc


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _too_large(size: int, max_bytes: int, path: str) -> FileAreaError:
    return FileAreaError(
        f"{path!r} is {size:,} bytes, over the {max_bytes:,}-byte cap for file areas; split it into smaller files"
    )


def _open_parents(root: Path, parents: tuple[str, ...], *, create: bool, path: str, where: str) -> int:
    """A descriptor of the file's directory, reached without following any symlink."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in parents:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=fd)
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
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
    data = _encode(content, encoding, path)
    if len(data) > max_bytes:
        raise _too_large(len(data), max_bytes, path)
    where = describe_area(org, folder_id, scope)
    root, _ = checked_root(data_dir, org, folder_id, scope)
    name = parts[-1]
    with _os_errors("write", path, where):
        root.mkdir(parents=True, exist_ok=True)
        dir_fd = _open_parents(root, parts[:-1], create=True, path=path, where=where)
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
    real = resolve_path(data_dir, org, folder_id, scope, path)
    where = describe_area(org, folder_id, scope)
    with _os_errors("read", path, where):
        # O_NOFOLLOW: the path was resolved above, so a symlink here was swapped in since.
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
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
        "path": "/".join(parts_of(path, allow_empty=False)),
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
    root, _ = checked_root(data_dir, org, folder_id, scope)
    name = parts[-1]
    with _os_errors("delete", path, where):
        dir_fd = _open_parents(root, parts[:-1], create=False, path=path, where=where)
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
    real = resolve_path(data_dir, org, folder_id, scope, path, allow_empty=True)
    with _os_errors("inspect", path, describe_area(org, folder_id, scope)):
        info = os.stat(real)
        digest = None
        if stat.S_ISREG(info.st_mode):
            sha = hashlib.sha256()
            with os.fdopen(os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    sha.update(chunk)
            digest = sha.hexdigest()
    return {
        "path": "/".join(parts_of(path, allow_empty=True)),
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
    real = resolve_path(data_dir, org, folder_id, scope, path, allow_empty=True)
    real_root = checked_root(data_dir, org, folder_id, scope)[1]
    if real == real_root and not os.path.lexists(real):
        return []
    where = describe_area(org, folder_id, scope)
    entries: list[dict[str, Any]] = []
    with _os_errors("list", path, where):
        if not stat.S_ISDIR(os.stat(real).st_mode):
            raise FileAreaError(f"{path!r} in {where} is a file, not a folder; read it, or list its parent folder")
        # Symlinked folders are listed but never descended into: walk does not follow links.
        walk = os.walk(real, onerror=_raise) if recursive else [(str(real), [], None)]
        for directory, _, _ in walk:
            with os.scandir(directory) as scan:
                for entry in scan:
                    if entry.name.startswith(_TEMP_PREFIX):
                        continue  # an in-flight write, not a file yet
                    info = entry.stat(follow_symlinks=False)
                    entries.append(
                        {
                            "name": entry.name,
                            "path": Path(entry.path).relative_to(real_root).as_posix(),
                            "is_dir": stat.S_ISDIR(info.st_mode),
                            "is_symlink": stat.S_ISLNK(info.st_mode),
                            "size": info.st_size,
                            "modified": _iso(info.st_mtime),
                        }
                    )
    return sorted(entries, key=lambda e: e["path"])


def _raise(exc: OSError) -> None:
    raise exc
