"""The deployment's secret in a file of the data directory, for servers without a shared database.

Processes of one user on one machine (stdio servers, HTTP servers with SQLite stores) share the
data directory, so they share this file and verify each other's handles. It is created on first
use, under the data directory's lock and written whole, mode 0600; a file that others may read
is refused rather than used, since whoever reads it can forge handles (not access: every use of
a handle is checked again, but a forged handle passes for one the server issued). So is a file
another user owns, and a data directory another user may write (or one below such a directory):
they could rename their own key into its place (`homeport._trusted_files`, as OpenSSH checks).
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from homeport._trusted_files import UntrustedPathError, check_directory
from homeport.errors import ConfigError
from homeport.files._atomic import locked, write_atomically

__all__ = ["MIN_SECRET_CHARS", "read_or_create_secret"]

MIN_SECRET_CHARS = 32
_FILE_MODE = 0o600


def read_or_create_secret(path: Path) -> bytes:
    """The secret in `path`, created (64 random hex digits) when there is none.

    Raises:
        ConfigError: the file is readable by others, not a regular file, too short, or cannot be
            read or written.
    """
    _check_directory(path.parent)
    found = _read(path)
    if found is not None:
        return found
    with locked(path):
        found = _read(path)  # another process may have created it while we waited
        if found is None:
            write_atomically(path, secrets.token_hex(32) + "\n", _FILE_MODE)
            found = _read(path)
    assert found is not None
    return found


def _check_directory(directory: Path) -> None:
    try:
        check_directory(directory)
    except FileNotFoundError:
        return  # created below, by this user
    except UntrustedPathError as exc:
        raise ConfigError(f"the deployment key's directory cannot be trusted: {exc}") from None


def _read(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read the deployment key {path}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_uid != os.geteuid():
            raise ConfigError(
                f"the deployment key {path} belongs to uid {info.st_uid}, not to this user (uid {os.geteuid()}), "
                f"who chose its content; run chown {os.geteuid()} {path}, or remove it and restart"
            )
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"the deployment key {path} is not a regular file; remove it")
        if info.st_mode & 0o077:
            raise ConfigError(
                f"the deployment key {path} may be read by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                f"run chmod 600 {path}, or remove it and restart (handles issued so far stop working)"
            )
        text = handle.read(4096).strip()
    if len(text) < MIN_SECRET_CHARS:
        raise ConfigError(
            f"the deployment key {path} is shorter than {MIN_SECRET_CHARS} characters; remove it and restart"
        )
    return text
