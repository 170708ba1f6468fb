"""The files of an import and where an export goes: resolved inside the workspace, read as regular files only.

An import reads only regular files whose real path is inside the workspace, and never opens a FIFO
(reading one would block the server). An export writes through a directory descriptor
(`store._export_dir`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from homeport.errors import InvalidItemError

__all__ = [
    "DEFAULT_EXPORT_DIR",
    "MAX_FILE_BYTES",
    "inside_workspace",
    "read_file",
]

DEFAULT_EXPORT_DIR = ".homeport/export"
# One export file; far above any real memory (a 100,000-item export is about 60 MB of JSON).
MAX_FILE_BYTES = 512 * 1024 * 1024


def inside_workspace(root: Path, given: str | None, default: str) -> Path:
    """Resolve a user-given directory against the workspace and refuse anything outside it.

    Raises:
        InvalidItemError: the directory lies outside the workspace (after resolving symlinks and ..).
    """
    candidate = Path(given or default)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = Path(os.path.realpath(candidate))
    if resolved != root and root not in resolved.parents:
        raise InvalidItemError(
            f"directory {given or default!r} resolves to {resolved}, outside the workspace {root}; "
            f"use a path inside the workspace (default: {DEFAULT_EXPORT_DIR})"
        )
    return resolved


def read_file(root: Path, path: Path) -> str:
    """A regular file inside the workspace as text; a FIFO or device is never opened (it could block).

    Raises:
        InvalidItemError: a symlink that leaves the workspace, a special file, or a file over MAX_FILE_BYTES.
        OSError, UnicodeDecodeError: the file cannot be read.
    """
    real = Path(os.path.realpath(path))
    if real != root and root not in real.parents:
        raise InvalidItemError(f"{path} is a symlink to {real}, outside the workspace {root}; copy the file instead")
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidItemError(f"{path} is not a regular file (a FIFO, device or directory); import refuses it")
        if info.st_size > MAX_FILE_BYTES:
            raise InvalidItemError(f"{path} is {info.st_size:,} bytes, over the import limit of {MAX_FILE_BYTES:,}")
        # newline="" semantics: a \r in a text field stays as written
        return handle.read(MAX_FILE_BYTES + 1).decode("utf-8")
