"""The uuid of a file area: one stable name for (organization, folder, scope).

`list_folders` returns it, and every file tool takes it as `folder_id` (`files.directory.Directory.
folder_owner` maps it back). Shared by the policy, which lists folders, and the directory, which
resolves them: neither may import the other.
"""

from __future__ import annotations

import json
import uuid

__all__ = ["folder_uuid", "looks_like_uuid"]

# A fixed namespace so that folder uuids stay the same across processes and releases.
_FOLDER_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://homeport.invalid/file-areas")


def folder_uuid(org: str, folder_id: str, scope: str) -> str:
    """A stable id for one area; JSON-encoding the parts keeps distinct triples distinct."""
    return str(uuid.uuid5(_FOLDER_NAMESPACE, json.dumps([org, folder_id, scope])))


def looks_like_uuid(value: str) -> bool:
    """A canonical uuid string (36 characters, as `folder_uuid` writes them); folder ids never contain
    four dashes in those places, and an id is at most 64 characters of letters, digits, '.', '_', '-'."""
    if len(value) != 36:
        return False
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False
