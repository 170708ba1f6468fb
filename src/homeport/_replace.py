"""Replace a small file whole: readers see the old file or the new one, never a mix.

Shared by the layers that keep small files of their own (the directory and tokens in `files`, the
instance registry in `registry`); each turns the OS error into its own domain error.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["replace_file"]


def replace_file(path: Path, text: str, mode: int) -> None:
    """Write `text` to a temp file beside `path`, fsync it, set `mode`, rename it over `path`.

    Raises:
        OSError: the file could not be written; no temp file is left behind.
    """
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
