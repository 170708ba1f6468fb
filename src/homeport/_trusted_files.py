"""Files and directories are trusted only when they are the user's own, as OpenSSH trusts its files.

A directory another user can write is one where that user can plant a file, swap one, or rename
the directory away and put their own in its place; a file they own or can write says whatever they
want. So before Homeport reads what its state, data or secret directories hold:

- the directory itself is owned by this user and not writable by group or others (a private one,
  for secrets, is not readable by them either);
- every directory above it is owned by this user or by root and is not writable by group or others,
  except a sticky directory owned by root (/tmp), where nobody can remove or rename what is not theirs;
  both the path as given and the path with its symlinks resolved are checked;
- a file is opened without following a symlink and without blocking (a FIFO never hangs a read),
  then checked on its descriptor: a regular file owned by this user or root, not writable by group or
  others (a private one, a secret, not readable by them either).

Used by the layers that keep such files (the instance registry, the daemon); each turns
`UntrustedPathError` into its own domain error or a warning. Its message names the path, what is
wrong with it and the `chmod`/`chown` that fixes it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["UntrustedPathError", "check_directory", "read_trusted_bytes", "read_trusted_file"]

_GROUP_OTHER_WRITE = stat.S_IWGRP | stat.S_IWOTH
_GROUP_OTHER_ANY = 0o077
# A registry, an instance record or a secret is a few KiB at most; a bigger "file" is not ours.
MAX_BYTES = 1024 * 1024


class UntrustedPathError(Exception):
    """A file or directory that another user could have written; `str()` says why and the fix."""

    def __init__(self, path: Path | str, problem: str, fix: str) -> None:
        super().__init__(f"{path} {problem}; {fix}")
        self.path = Path(path)
        self.problem = problem
        self.fix = fix


def check_directory(path: Path | str, *, private: bool = False) -> None:
    """Raise unless `path` is a directory of this user that no other user can change (see the module).

    `private`: not even readable by group or others (a directory of secrets).

    Raises:
        UntrustedPathError: the directory, or one above it, fails a check (the message names it and the fix).
        FileNotFoundError: it does not exist.
    """
    uid = os.geteuid()
    lexical = Path(os.path.abspath(path))
    info = os.stat(lexical)
    if not stat.S_ISDIR(info.st_mode):
        raise UntrustedPathError(lexical, "is not a directory", "remove it, or choose another directory")
    _check_own(lexical, info, uid, private=private, kind="directory")
    real = Path(os.path.realpath(lexical))
    seen: set[Path] = set()
    for ancestor in (*_above(lexical), *_above(real)):
        if ancestor in seen:
            continue
        seen.add(ancestor)
        _check_ancestor(ancestor, os.stat(ancestor), uid)


def read_trusted_file(path: Path | str, *, private: bool = False, max_bytes: int = MAX_BYTES) -> bytes | None:
    """`read_trusted_bytes`, after checking the file's directory (and those above it) with `check_directory`:
    whoever may write the directory may put another file in its place.

    Raises:
        UntrustedPathError: as `check_directory` and `read_trusted_bytes`.
        OSError: the file could not be read.
    """
    path = Path(path)
    try:
        check_directory(path.parent)
    except FileNotFoundError:
        return None
    return read_trusted_bytes(path, private=private, max_bytes=max_bytes)


def read_trusted_bytes(path: Path | str, *, private: bool = False, max_bytes: int = MAX_BYTES) -> bytes | None:
    """The content of the file at `path` if it is a file of this user's that no one else can change
    (with `private`, nor read); None if there is none.

    Raises:
        UntrustedPathError: a symlink, a FIFO or another non-regular file, a file of another user, or one
            that others may write (with `private`: read), or larger than any file of Homeport's.
        OSError: the file could not be read.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UntrustedPathError(path, "is a symlink", f"remove it (rm {path}); Homeport writes it again") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UntrustedPathError(
                path, "is not a regular file (a FIFO, a device or a directory)", f"remove it (rm {path})"
            )
        _check_own(path, info, os.geteuid(), private=private, kind="file")
        if info.st_size > max_bytes:
            raise UntrustedPathError(path, f"is larger than {max_bytes} bytes", f"remove it (rm {path})")
        chunks: list[bytes] = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
            if sum(map(len, chunks)) > max_bytes:
                raise UntrustedPathError(path, f"is larger than {max_bytes} bytes", f"remove it (rm {path})")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _above(path: Path) -> Iterator[Path]:
    yield from path.parents


def _check_own(path: Path, info: os.stat_result, uid: int, *, private: bool, kind: str) -> None:
    if info.st_uid not in (uid, 0) or (kind == "directory" and info.st_uid != uid):
        raise UntrustedPathError(
            path, f"belongs to uid {info.st_uid}, not to this user (uid {uid})", f"run chown {uid} {path}"
        )
    mode = stat.S_IMODE(info.st_mode)
    if private and mode & _GROUP_OTHER_ANY:
        wanted = "700" if kind == "directory" else "600"
        raise UntrustedPathError(
            path, f"may be read or changed by other users (mode {mode:o})", f"run chmod {wanted} {path}"
        )
    if mode & _GROUP_OTHER_WRITE:
        raise UntrustedPathError(path, f"may be changed by other users (mode {mode:o})", f"run chmod go-w {path}")


def _check_ancestor(path: Path, info: os.stat_result, uid: int) -> None:
    if info.st_uid not in (uid, 0):
        raise UntrustedPathError(
            path,
            f"(a directory above Homeport's) belongs to uid {info.st_uid}, who can replace what is below it",
            f"run chown {uid} {path}, or choose a directory elsewhere",
        )
    mode = stat.S_IMODE(info.st_mode)
    sticky_root = bool(mode & stat.S_ISVTX) and info.st_uid == 0
    if mode & _GROUP_OTHER_WRITE and not sticky_root:
        raise UntrustedPathError(
            path,
            f"(a directory above Homeport's) may be changed by other users (mode {mode:o}), who can replace "
            "what is below it",
            f"run chmod go-w {path}, or choose a directory elsewhere",
        )
