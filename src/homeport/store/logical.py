"""Where the memory of a logical workspace (a key such as ``acme/api``) lives on a shared server."""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["LOGICAL_DIRNAME", "logical_store_root"]

LOGICAL_DIRNAME = "logical-workspaces"


def logical_store_root(data_dir: Path, key: str) -> Path:
    """The directory that holds the store of `key` (already validated) under the server's data directory.

    One flat directory per key: its segments joined by '~' (a character no key has), so the name
    is readable and two keys never share it, then a digest of the exact key, so keys that differ
    only in case stay apart on a case-insensitive file system.
    """
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return data_dir / LOGICAL_DIRNAME / f"{key.replace('/', '~')}.{digest}"
