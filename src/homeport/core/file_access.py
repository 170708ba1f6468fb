"""Who is calling the file tools, and what the policy says: the bridge from principal to file areas.

The caller's agent comes from the principal (a verified bearer token over HTTP, `--agent` on
stdio), never from a tool argument. Every operation asks the policy first and only then calls the
executor with explicit arguments.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from homeport.errors import ConfigError, FileAreaError, PermissionDeniedError
from homeport.files import areas
from homeport.files.directory import Directory, DirectoryFile
from homeport.policy import file_areas as policy

__all__ = ["DirectoryCache", "FileAreaService", "OpenArea"]


class DirectoryCache:
    """The directory file, reloaded when its modification time changes."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._directory = Directory()

    def get(self) -> Directory:
        if self.path is None:
            return self._directory
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return Directory()
        stamp = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if stamp != self._stamp:
                self._directory = DirectoryFile(self.path).load()
                self._stamp = stamp
            return self._directory


@dataclass
class FileAreaService:
    data_dir: Path
    directory: DirectoryCache
    max_bytes: int = areas.DEFAULT_MAX_BYTES

    def caller(self, agent_id: str | None) -> policy.Caller:
        """Raises: PermissionDeniedError when no agent is known for this call."""
        if agent_id is None:
            raise PermissionDeniedError(
                "file areas need to know which agent is calling: over HTTP start the server with --auth and send "
                "a token from `homeport tokens add AGENT`; over stdio start it with --agent AGENT (or HOMEPORT_AGENT)"
            )
        try:
            ref = self.directory.get().agent(agent_id)
        except ConfigError as exc:
            raise PermissionDeniedError(
                f"agent {agent_id!r} is not in the directory{_where(self.directory.path)}; add it with "
                f"`homeport directory add-agent ORG {agent_id}` ({exc.message})"
            ) from None
        return policy.Caller(agent_id=ref.agent_id, org=ref.org, team=ref.team, is_leadership=ref.is_leadership)

    def list_folders(self, agent_id: str | None, list_scope: str) -> list[dict[str, str]]:
        caller = self.caller(agent_id)
        directory = self.directory.get()
        return policy.list_readable_folders(
            caller,
            list_scope,
            agents=directory.agents_of(caller.org),
            teams=directory.teams_of(caller.org),
            names=directory.names_of(caller.org),
        )

    def open(self, agent_id: str | None, folder_id: str, scope: str, action: str) -> OpenArea:
        """The area of `folder_id`/`scope` for `action` (read, write, delete), once the policy allows it.
        `folder_id` is an agent or team id, or the uuid of one of its areas (from list_folders).

        Raises:
            PermissionDeniedError: no agent, an agent missing from the directory, or the policy refuses.
            FileAreaError: no such folder, or a uuid of the folder's other scope.
        """
        caller = self.caller(agent_id)
        owner = self.directory.get().folder_owner(caller.org, folder_id)
        if owner.scope is not None and owner.scope != scope:
            raise FileAreaError(
                f"folder {folder_id!r} is the uuid of {owner.folder_id!r}'s {owner.scope} area, and the call says "
                f"scope {scope!r}; pass scope {owner.scope!r}, or the uuid list_folders gives for the {scope} area"
            )
        folder_id = owner.folder_id
        exists = areas.area_exists(self.data_dir, caller.org, folder_id, scope) if scope in policy.SCOPES else True
        if action == "write" and not exists:
            action = "create"  # a folder that is not on disk yet: only its owner or team may create it
        folder = policy.Folder(
            owner_kind=owner.kind,
            owner_id=folder_id,
            org=caller.org,
            owner_team=owner.team if owner.kind == "agent" else None,
            exists=exists,
        )
        decision = policy.require(caller, folder, scope, action)
        return OpenArea(self.data_dir, caller.org, folder_id, scope, decision.rule)


@dataclass(frozen=True)
class OpenArea:
    """A folder's area that the policy let this call use for its action; the executor runs inside it."""

    data_dir: Path
    org: str
    folder_id: str
    scope: str
    rule: str

    def run(self, operation: Callable[..., Any], path: str, **kwargs: Any) -> dict[str, Any]:
        """Run the executor function `operation` on `path`; the result names the location and the rule."""
        result = operation(self.data_dir, self.org, self.folder_id, self.scope, path, **kwargs)
        if isinstance(result, list):
            result = {"entries": result}
        root = areas.area_root(self.data_dir, self.org, self.folder_id, self.scope)
        return {
            **result,
            "area": {"org": self.org, "folder_id": self.folder_id, "scope": self.scope, "root": str(root)},
            "rule": self.rule,
        }


def _where(path: Path | None) -> str:
    return f" {path}" if path else " (none configured: pass --directory FILE)"
