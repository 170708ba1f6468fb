"""Small files written whole: lock, write a temp file beside the target, fsync, rename over it.

Used for the directory file and the token file, which are read far more often than written and
must never be seen half-written. (File-area writes have their own, symlink-proof path in
`homeport.files.areas`.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from homeport._replace import replace_file
from homeport.errors import ConfigError

LOCK_TIMEOUT_SECONDS = 10.0


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock that serialises read-modify-write cycles on `path`.

    Raises:
        ConfigError: another process held the lock for longer than the timeout.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(lock_path(path), timeout=LOCK_TIMEOUT_SECONDS):
            yield
    except Timeout as exc:
        raise ConfigError(
            f"could not lock {path} within {LOCK_TIMEOUT_SECONDS:g}s; another homeport process is "
            f"editing it, or a stale {lock_path(path).name} is left behind: retry, or remove it"
        ) from exc


def write_atomically(path: Path, text: str, mode: int) -> None:
    """Replace `path` with `text` so that readers see the old file or the new one, never a mix.

    Raises:
        ConfigError: the file could not be written (the OS error is chained).
    """
    try:
        replace_file(path, text, mode)
    except OSError as exc:
        raise ConfigError(f"could not write {path}: {exc.strerror or exc}") from exc
