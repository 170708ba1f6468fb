"""Where the memory of a logical workspace (a key such as ``acme/api``) lives on a shared server."""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from homeport.errors import InvalidWorkspaceError
from homeport.workspace.keys import canonical_key, key_problem

__all__ = ["LOGICAL_DIRNAME", "logical_store_for", "logical_store_root"]

LOGICAL_DIRNAME = "logical-workspaces"


def logical_store_root(data_dir: Path, key: str) -> Path:
    """The directory that holds the store of `key` (already validated) under the server's data directory.

    One flat directory per key: its segments joined by '~' (a character no key has), so the name
    is readable and two keys never share it, then a digest of the exact key, so keys that differ
    only in case stay apart on a case-insensitive file system.
    """
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return data_dir / LOGICAL_DIRNAME / f"{key.replace('/', '~')}.{digest}"


def logical_store_for(data_dir: Path, key: str) -> Path:
    """The directory of the store of canonical `key` (`homeport.workspace.keys.canonical_key`).

    Its own directory (`logical_store_root`), unless a Homeport that did not make keys canonical
    kept this key's memory under another spelling (`acme/Vault`, `acme/vault.git`): then the one
    directory among them that holds a store, so that memory stays where it was.

    Raises:
        InvalidWorkspaceError: two spellings of the key hold a store, so which one is its memory
            cannot be told; the message names them and how to settle it.
    """
    own = logical_store_root(data_dir, key)
    spellings = _other_spellings(data_dir).get(key)
    if not spellings:
        return own
    held = [(k, d) for k, d in [(key, own), *spellings] if (d / ".homeport" / "homeport.db").exists()]
    if len(held) > 1:
        names = ", ".join(repr(k) for k, _ in held)
        raise InvalidWorkspaceError(
            f"the memory of logical workspace {key!r} is kept under {len(held)} spellings of its key ({names}), "
            f"in {', '.join(str(d) for _, d in held)}; keys are now compared lower-cased and without a trailing "
            "'.' or '.git'. Keep one: move the others' items into it (homeport export / import) and remove "
            "their directories"
        )
    return held[0][1] if held else own


@functools.lru_cache(maxsize=16)
def _other_spellings(data_dir: Path) -> dict[str, list[tuple[str, Path]]]:
    """Store directories named by a key that is not canonical, by canonical key. Read once per process:
    this Homeport only makes directories of canonical keys, so none appears later."""
    found: dict[str, list[tuple[str, Path]]] = {}
    try:
        entries = list(os.scandir(data_dir / LOGICAL_DIRNAME))
    except OSError:
        return found
    for entry in entries:
        name, _, digest = entry.name.rpartition(".")
        key = name.replace("~", "/")
        if not name or key_problem(key) is not None or hashlib.sha256(key.encode()).hexdigest()[:16] != digest:
            continue  # not a directory this module named
        try:
            canonical = canonical_key(key)
        except InvalidWorkspaceError:
            continue
        if canonical != key:
            found.setdefault(canonical, []).append((key, Path(entry.path)))
    return found
