"""Writing an export: through a directory descriptor, and only over what an earlier export wrote.

Why descriptors: checking a path (`realpath`) and writing to it are two moments, and an export
directory swapped for a symlink between them sent files outside the workspace (12 files in 2,239
calls, issue 22). Here the directory is opened once from the workspace root, one component at a
time with ``O_NOFOLLOW``, and every file is created and renamed relative to that descriptor, so
whatever changes on disk meanwhile, the files land in the directory that was reached from the root
without following a link. (File areas do the same: `homeport.files._dirfd`.)

Why a marker: `export(output_dir=".")` used to replace the project's own `manifest.json` and
`links.json`. A file where an export file goes is replaced only when the directory's
`manifest.json` is Homeport's (it carries `"written_by": "homeport"`, or the keys every earlier
export's manifest had); anything else is refused by name before the first write.

    fd = open_export_dir(root, target)
    try:
        refuse_foreign_files(fd, target, names)
        for name, body in bodies.items():
            write_file(fd, name, body)
        os.fsync(fd)
    finally:
        os.close(fd)
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from homeport.errors import InvalidItemError

__all__ = ["MARKER", "export_file_names", "open_export_dir", "refuse_foreign_files", "write_file"]

MARKER = {"written_by": "homeport"}
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# The keys of every manifest an export wrote before the marker existed.
_LEGACY_KEYS = frozenset({"format", "format_version", "schema_revision", "exported_at", "counts"})
_MAX_MANIFEST_BYTES = 1_000_000


def export_file_names(sections: Iterable[str]) -> frozenset[str]:
    """Every name an export writes, in either format: a Homeport export directory owns these."""
    return frozenset({"manifest.json"} | {f"{s}.{ext}" for s in sections for ext in ("json", "md")})


def open_export_dir(root: Path, target: Path) -> int:
    """A descriptor of `target` (inside `root`), reached from `root` without following a symlink;
    missing directories are created. The caller closes it.

    Raises:
        InvalidItemError: a component is a symlink (or became one) or a file.
        OSError: anything else from the OS (the caller translates it).
    """
    os.makedirs(root, exist_ok=True)  # the workspace's own root is trusted, as the old path-based export did
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in target.relative_to(root).parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o755, dir_fd=fd)
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise InvalidItemError(
                        f"cannot export to {target}: {name!r} on the way there is a symlink (or was changed into one "
                        "while exporting); export does not follow it: export to a real directory of the workspace"
                    ) from None
                if exc.errno == errno.ENOTDIR:
                    raise InvalidItemError(
                        f"cannot export to {target}: {name!r} on the way there is a file, not a directory; choose a "
                        "directory inside the workspace that is not a file"
                    ) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def refuse_foreign_files(dir_fd: int, target: Path, names: Iterable[str]) -> None:
    """Refuse, naming it, any of `names` in the directory that an export must not replace: anything
    but a regular file, and any file at all unless the directory's manifest is Homeport's.

    Raises:
        InvalidItemError: the first such file.
    """
    ours: bool | None = None  # read the manifest only when a file is in the way
    for name in names:
        try:
            mode = os.lstat(name, dir_fd=dir_fd).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            kind = "a symlink" if stat.S_ISLNK(mode) else "a directory" if stat.S_ISDIR(mode) else "a special file"
            raise InvalidItemError(
                f"{target / name} is {kind}, not a regular file; export replaces only its own files: remove it or "
                "export to another directory"
            )
        if ours is None:
            ours = _homeport_manifest(dir_fd)
        if not ours:
            raise InvalidItemError(
                f"{target / name} exists and was not written by Homeport (the directory has no manifest.json of a "
                "Homeport export); export replaces only its own files: export to another directory (the default "
                "is .homeport/export), or move that file away"
            )


def _homeport_manifest(dir_fd: int) -> bool:
    try:
        fd = os.open("manifest.json", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        raw = handle.read(_MAX_MANIFEST_BYTES + 1)
    try:
        manifest: Any = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    if not isinstance(manifest, dict):
        return False
    return all(manifest.get(k) == v for k, v in MARKER.items()) or manifest.keys() >= _LEGACY_KEYS


def write_file(dir_fd: int, name: str, body: str) -> None:
    """Replace `name` in the directory atomically: a new file beside it, synced, renamed over it."""
    temporary = f".{name}.{secrets.token_hex(6)}"
    fd = os.open(temporary, _NEW_FILE_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())  # else a crash after the rename may leave an empty file for the old one
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise
