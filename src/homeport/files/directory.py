"""The directory: which organizations, teams, agents and leadership exist.

It lives in one TOML file, read with the standard library and rewritten whole by the edit
methods of `DirectoryFile` (under a lock, atomically). Format::

    [organizations.acme]
    leadership = ["ada"]            # agents of this organization; optional
    teams = ["data", "platform"]    # team ids; optional
    workspace_roots = ["/srv/acme"] # workspaces its agents may use under --auth; optional
    read_only_workspace_roots = ["/srv/shared"]  # ... for reads only; optional

    [organizations.acme.agents.ada]
    team = "platform"               # optional: an agent is in at most one team

    [organizations.acme.agents.carl]    # an agent without a team

    [organizations.acme.names]      # display names of folders (agents and teams); optional
    ada = "Ada's desk"
    platform = "Platform team"

Rules, checked on load and on every edit (a break raises `ConfigError` naming the bad value):
ids are 1-64 characters of letters, digits, ``.``, ``_`` and ``-``, starting with a letter or a
digit (they become directory names); an agent's team is one of its organization's teams; agent
and team ids are unique within an organization (they share the ``workspaces/`` directory); an
agent id is unique across all organizations; leadership names agents of the same organization;
workspace roots are absolute paths without ``..``, each listed once (read-write or read-only);
a display name names an agent or team of its organization and is 1-100 printable characters.
Edits rewrite the file in a canonical, sorted form, so comments are not kept.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any, Literal

from homeport._folder_ids import folder_uuid, looks_like_uuid
from homeport._trusted_files import UntrustedPathError, read_trusted_file
from homeport.errors import ConfigError, FileAreaError
from homeport.files._atomic import locked, write_atomically

__all__ = [
    "AgentRef",
    "Directory",
    "DirectoryFile",
    "FolderOwner",
    "Organization",
    "check_display_name",
    "check_id",
    "check_workspace_root",
]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SCOPES = ("private", "shared")  # the areas of a folder (policy.file_areas.SCOPES; files may not import policy)
_NAME_LIMIT = 100
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def check_id(value: object, what: str) -> str:
    """Return `value` if it is a valid id for `what` ("agent", "team", "organization").

    Raises:
        ConfigError: it is not a string of the allowed characters and length.
    """
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ConfigError(
            f"{what} id {value!r} is not valid: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or a digit"
        )
    return value


@dataclass(frozen=True)
class AgentRef:
    agent_id: str
    org: str
    team: str | None
    is_leadership: bool


@dataclass(frozen=True)
class FolderOwner:
    """Who owns the folder `folder_id` of `org`; `team` is the agent's team, or the team itself.
    `scope` is set when the folder was named by its area's uuid, which names one scope."""

    org: str
    folder_id: str
    kind: Literal["agent", "team"]
    team: str | None
    scope: str | None = None


@dataclass(frozen=True)
class Organization:
    name: str
    teams: tuple[str, ...] = ()
    agents: Mapping[str, str | None] = field(default_factory=dict)  # agent id -> team id or None
    leadership: tuple[str, ...] = ()
    workspace_roots: tuple[str, ...] = ()  # absolute; its agents may use workspaces inside them
    read_only_workspace_roots: tuple[str, ...] = ()
    names: Mapping[str, str] = field(default_factory=dict)  # folder id (agent or team) -> display name


def check_display_name(value: object, where: str = "display name") -> str:
    """`value`, stripped, as a display name.

    Raises:
        ConfigError: not a string, empty, longer than 100 characters, or holding control characters.
    """
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} {value!r} is not a name; pass 1-{_NAME_LIMIT} printable characters")
    if any(c < " " or c == "\x7f" for c in value):
        raise ConfigError(f"{where} {value!r} contains control characters; pass printable characters only")
    if len(value.strip()) > _NAME_LIMIT:
        raise ConfigError(f"{where} is {len(value.strip())} characters long; the limit is {_NAME_LIMIT}")
    return value.strip()


def check_workspace_root(value: object, where: str = "workspace root") -> str:
    """`value` as a normalised absolute path (no trailing slash).

    Raises:
        ConfigError: not a string, not absolute, has a '..' component or control characters.
    """
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} {value!r} is not a path; pass an absolute directory like /srv/acme")
    if any(c < " " or c == "\x7f" for c in value):
        raise ConfigError(f"{where} {value!r} contains control characters; pass an absolute directory like /srv/acme")
    path = PurePosixPath(value)
    if not path.is_absolute():
        raise ConfigError(f"{where} {value!r} is not an absolute path; pass one like /srv/acme")
    if ".." in path.parts:
        raise ConfigError(f"{where} {value!r} has a '..' component; pass the directory it means")
    return str(path)


class Directory:
    """A validated, immutable snapshot of the directory. Edits return a new snapshot."""

    def __init__(self, organizations: Iterable[Organization] = ()) -> None:
        """Raises: ConfigError: a rule of the module docstring is broken."""
        # Frozen copies: a snapshot handed out must not change under its readers.
        self._orgs = {
            org.name: Organization(
                org.name,
                tuple(org.teams),
                MappingProxyType(dict(org.agents)),
                tuple(org.leadership),
                tuple(org.workspace_roots),
                tuple(org.read_only_workspace_roots),
                MappingProxyType(dict(org.names)),
            )
            for org in organizations
        }
        self._agents: dict[str, AgentRef] = {}
        for org in self._orgs.values():
            self._validate(org)
            for agent_id, team in org.agents.items():
                if agent_id in self._agents:
                    raise ConfigError(
                        f"agent {agent_id!r} is in organizations {self._agents[agent_id].org!r} and "
                        f"{org.name!r}; an agent belongs to one organization"
                    )
                self._agents[agent_id] = AgentRef(agent_id, org.name, team, agent_id in org.leadership)

    @staticmethod
    def _validate(org: Organization) -> None:
        check_id(org.name, "organization")
        where = f"in organization {org.name!r}"
        for kind, ids in (("team", org.teams), ("leadership agent", org.leadership)):
            seen: set[str] = set()
            for value in ids:
                check_id(value, kind.split()[-1])
                if value in seen:
                    raise ConfigError(f"{kind} {value!r} is listed twice {where}")
                seen.add(value)
        for agent_id, team in org.agents.items():
            check_id(agent_id, "agent")
            if agent_id in org.teams:
                raise ConfigError(
                    f"id {agent_id!r} is both an agent and a team {where}; agent and team ids "
                    "share one folder namespace, so rename one of them"
                )
            if team is not None and team not in org.teams:
                known = ", ".join(org.teams) or "none"
                raise ConfigError(
                    f"agent {agent_id!r} is in unknown team {team!r} {where} (teams: {known}); add the team first"
                )
        for folder_id, name in org.names.items():
            if folder_id not in org.agents and folder_id not in org.teams:
                raise ConfigError(
                    f"display name {name!r} is for {folder_id!r}, neither an agent nor a team {where}; "
                    "add it first, or remove the name"
                )
            check_display_name(name, f"display name of {folder_id!r} {where}")
        for agent_id in org.leadership:
            if agent_id not in org.agents:
                raise ConfigError(f"leadership names unknown agent {agent_id!r} {where}; add the agent first")
        roots: dict[str, str] = {}
        for kind, values in (("read-write", org.workspace_roots), ("read-only", org.read_only_workspace_roots)):
            for value in values:
                root = check_workspace_root(value, f"workspace root {where}")
                if root in roots:
                    if roots[root] == kind:
                        raise ConfigError(f"workspace root {root!r} is listed twice {where}")
                    raise ConfigError(f"workspace root {root!r} is both read-write and read-only {where}; keep one")
                roots[root] = kind

    # Lookups -----------------------------------------------------------------------------

    @property
    def organizations(self) -> tuple[str, ...]:
        return tuple(sorted(self._orgs))

    def organization(self, org: str) -> Organization:
        """Raises: ConfigError: `org` is not in the directory."""
        try:
            return self._orgs[org]
        except KeyError:
            known = ", ".join(self.organizations) or "none"
            raise ConfigError(f"unknown organization {org!r} (known: {known})") from None

    def agent(self, agent_id: str) -> AgentRef:
        """Raises: ConfigError: `agent_id` is not an agent of any organization."""
        try:
            return self._agents[agent_id]
        except KeyError:
            raise ConfigError(f"agent {agent_id!r} is not in the directory; add it to an organization first") from None

    def agents_of(self, org: str) -> dict[str, str | None]:
        """Agent id -> team id (or None) for `org`. Raises: ConfigError: unknown `org`."""
        return dict(self.organization(org).agents)

    def teams_of(self, org: str) -> list[str]:
        """Raises: ConfigError: unknown `org`."""
        return list(self.organization(org).teams)

    def name_of(self, org: str, folder_id: str) -> str | None:
        """The display name of folder `folder_id` of `org`, or None. Raises: ConfigError: unknown `org`."""
        return self.organization(org).names.get(folder_id)

    def names_of(self, org: str) -> dict[str, str]:
        """Raises: ConfigError: unknown `org`."""
        return dict(self.organization(org).names)

    def folder_owner(self, org: str, folder_id: str) -> FolderOwner:
        """Find the agent or team whose id is `folder_id` in `org`; `folder_id` may also be the uuid of
        one of its areas (as `list_folders` returns), which names the scope too (`FolderOwner.scope`).

        Raises:
            ConfigError: `org` is not in the directory.
            FileAreaError: `folder_id` is neither an agent nor a team of `org`, nor an area uuid of one.
        """
        organization = self.organization(org)
        if looks_like_uuid(folder_id):
            wanted = folder_id.lower()
            for candidate in (*organization.teams, *organization.agents):
                for scope in _SCOPES:
                    if folder_uuid(org, candidate, scope) == wanted:
                        return replace(self.folder_owner(org, candidate), scope=scope)
            raise FileAreaError(
                f"folder {folder_id!r} is the uuid of no folder of organization {org!r}; "
                "call list_folders to see the folder ids and uuids you can use"
            )
        if folder_id in organization.teams:
            return FolderOwner(org, folder_id, "team", folder_id)
        if folder_id in organization.agents:
            return FolderOwner(org, folder_id, "agent", organization.agents[folder_id])
        raise FileAreaError(
            f"folder {folder_id!r} is neither an agent nor a team of organization {org!r}; "
            "call list_folders to see the folder ids you can use"
        )

    # Edits (pure: each returns a new, validated snapshot) ---------------------------------

    def with_organization(self, org: str) -> Directory:
        """Raises: ConfigError: `org` exists already or is not a valid id."""
        if org in self._orgs:
            raise ConfigError(f"organization {org!r} exists already")
        return Directory([*self._orgs.values(), Organization(check_id(org, "organization"))])

    def with_agent(self, org: str, agent_id: str, team: str | None = None) -> Directory:
        """Raises: ConfigError: unknown `org` or `team`, or `agent_id` taken or invalid."""
        current = self.organization(org)
        if agent_id in self._agents:
            raise ConfigError(f"agent {agent_id!r} exists already in organization {self._agents[agent_id].org!r}")
        return self._replacing(replace(current, agents={**current.agents, agent_id: team}))

    def with_team(self, org: str, team: str) -> Directory:
        """Raises: ConfigError: unknown `org`, or `team` taken or invalid."""
        current = self.organization(org)
        if team in current.teams:
            raise ConfigError(f"team {team!r} exists already in organization {org!r}")
        return self._replacing(replace(current, teams=(*current.teams, team)))

    def with_leadership(self, org: str, agents: Iterable[str]) -> Directory:
        """Raises: ConfigError: unknown `org`, or an agent not of `org`."""
        return self._replacing(replace(self.organization(org), leadership=tuple(agents)))

    def with_workspace_root(self, org: str, root: str, *, read_only: bool = False) -> Directory:
        """Grant `org`'s agents `root` (read-only when `read_only`); a read-only root granted
        read-write moves to the read-write list.

        Raises:
            ConfigError: unknown `org`, an invalid path, or the root is already granted so.
        """
        current = self.organization(org)
        root = check_workspace_root(root)
        same, other = (
            (current.read_only_workspace_roots, current.workspace_roots)
            if read_only
            else (current.workspace_roots, current.read_only_workspace_roots)
        )
        if root in same:
            kind = "read-only" if read_only else "read-write"
            raise ConfigError(f"{root} is already a {kind} workspace root of organization {org!r}")
        same, other = (*same, root), tuple(r for r in other if r != root)
        rw, ro = (other, same) if read_only else (same, other)
        return self._replacing(replace(current, workspace_roots=rw, read_only_workspace_roots=ro))

    def without_workspace_root(self, org: str, root: str) -> Directory:
        """Raises: ConfigError: unknown `org`, or `root` is not one of its roots."""
        current = self.organization(org)
        root = check_workspace_root(root)
        if root not in (*current.workspace_roots, *current.read_only_workspace_roots):
            raise ConfigError(f"{root} is not a workspace root of organization {org!r}; `directory show` lists them")
        return self._replacing(
            replace(
                current,
                workspace_roots=tuple(r for r in current.workspace_roots if r != root),
                read_only_workspace_roots=tuple(r for r in current.read_only_workspace_roots if r != root),
            )
        )

    def with_name(self, org: str, folder_id: str, name: str | None) -> Directory:
        """`folder_id`'s display name set to `name`, or removed when `name` is None or empty."""
        current = self.organization(org)
        names = dict(current.names)
        if name:
            names[folder_id] = check_display_name(name, f"display name of {folder_id!r}")
            if folder_id not in current.agents and folder_id not in current.teams:
                raise ConfigError(
                    f"{folder_id!r} is neither an agent nor a team of organization {org!r}; add it first "
                    "(homeport directory add-agent or add-team)"
                )
        else:
            names.pop(folder_id, None)
        return self._replacing(replace(current, names=names))

    def _replacing(self, org: Organization) -> Directory:
        return Directory([*(o for o in self._orgs.values() if o.name != org.name), org])

    # TOML ---------------------------------------------------------------------------------

    @classmethod
    def from_toml(cls, text: str, source: str = "<directory>") -> Directory:
        """Parse and validate the file format of the module docstring.

        Raises:
            ConfigError: not TOML, an unexpected key or type, or a broken rule; names `source`.
        """
        try:
            data = tomllib.loads(text)
            return cls(_parse(data))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{source} is not valid TOML: {exc}") from exc
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc.message}") from exc

    def to_toml(self) -> str:
        lines = [
            "# Homeport directory: organizations, teams, agents, leadership.",
            "# Rewritten by homeport edits, which keep no comments.",
        ]
        for name in self.organizations:
            org = self._orgs[name]
            lines += [
                "",
                f"[organizations.{_key(name)}]",
                f"leadership = {_array(sorted(org.leadership))}",
                f"teams = {_array(sorted(org.teams))}",
            ]
            if org.workspace_roots:
                lines.append(f"workspace_roots = {_array(org.workspace_roots)}")
            if org.read_only_workspace_roots:
                lines.append(f"read_only_workspace_roots = {_array(org.read_only_workspace_roots)}")
            for agent_id in sorted(org.agents):
                lines += ["", f"[organizations.{_key(name)}.agents.{_key(agent_id)}]"]
                team = org.agents[agent_id]
                if team is not None:
                    lines.append(f"team = {_string(team)}")
            if org.names:
                lines += ["", f"[organizations.{_key(name)}.names]"]
                lines += [f"{_key(folder_id)} = {_string(org.names[folder_id])}" for folder_id in sorted(org.names)]
        return "\n".join(lines) + "\n"


def _parse(data: dict[str, Any]) -> list[Organization]:
    _only_keys(data, {"organizations"}, "the top level")
    orgs = _table(data.get("organizations", {}), "organizations")
    result = []
    for name, body in orgs.items():
        where = f"organizations.{name}"
        body = _table(body, where)
        _only_keys(
            body, {"leadership", "teams", "agents", "workspace_roots", "read_only_workspace_roots", "names"}, where
        )
        names = _table(body.get("names", {}), f"{where}.names")
        agents: dict[str, str | None] = {}
        for agent_id, agent_body in _table(body.get("agents", {}), f"{where}.agents").items():
            agent_body = _table(agent_body, f"{where}.agents.{agent_id}")
            _only_keys(agent_body, {"team"}, f"{where}.agents.{agent_id}")
            team = agent_body.get("team")
            if team is not None and not isinstance(team, str):
                raise ConfigError(f"{where}.agents.{agent_id}.team must be a string, not {team!r}")
            agents[agent_id] = team
        result.append(
            Organization(
                name,
                teams=_strings(body.get("teams", []), f"{where}.teams"),
                agents=agents,
                leadership=_strings(body.get("leadership", []), f"{where}.leadership"),
                workspace_roots=_roots(body.get("workspace_roots", []), f"{where}.workspace_roots"),
                read_only_workspace_roots=_roots(
                    body.get("read_only_workspace_roots", []), f"{where}.read_only_workspace_roots"
                ),
                names={k: check_display_name(v, f"{where}.names.{k}") for k, v in names.items()},
            )
        )
    return result


def _roots(value: object, where: str) -> tuple[str, ...]:
    return tuple(check_workspace_root(v, f"{where} entry") for v in _strings(value, where))


def _table(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table, not {value!r}")
    return value


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings, not {value!r}")
    return tuple(value)


def _only_keys(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} in {where}; allowed: {', '.join(sorted(allowed))}")


def _string(value: str) -> str:
    # Ids are validated to plain characters, but escape anyway so any string stays valid TOML.
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c >= " " and c != "\x7f" else f"\\u{ord(c):04x}" for c in escaped) + '"'


def _key(value: str) -> str:
    return value if _BARE_KEY.fullmatch(value) else _string(value)


def _array(values: Iterable[str]) -> str:
    return "[" + ", ".join(_string(v) for v in values) + "]"


class DirectoryFile:
    """The directory file on disk: load it, or edit it under a lock with an atomic rewrite."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def load(self) -> Directory:
        """Raises: ConfigError: the file is missing, unreadable or invalid."""
        loaded = self.load_if_present()
        if loaded is None:
            raise ConfigError(f"directory file {self.path} does not exist; create it by adding an organization")
        return loaded

    def load_if_present(self) -> Directory | None:
        """The directory, or None when its file does not exist yet (a fresh setup).

        Raises: ConfigError: the file is unreadable, invalid or not the user's own.
        """
        try:
            # Whoever may write it (or its directory) may grant themselves every folder and workspace.
            raw = read_trusted_file(self.path)
            text = raw.decode("utf-8") if raw is not None else None
        except UntrustedPathError as exc:
            raise ConfigError(f"directory file {exc}; nothing is granted from it until then") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"could not read directory file {self.path}: {exc}") from exc
        if text is None:
            return None
        return Directory.from_toml(text, source=str(self.path))

    def add_organization(self, org: str) -> Directory:
        """Raises: ConfigError: see `Directory.with_organization`; the file is left unchanged."""
        return self._edit(lambda d: d.with_organization(org))

    def add_agent(self, org: str, agent: str, team: str | None = None) -> Directory:
        """Raises: ConfigError: see `Directory.with_agent`; the file is left unchanged."""
        return self._edit(lambda d: d.with_agent(org, agent, team))

    def add_team(self, org: str, team: str) -> Directory:
        """Raises: ConfigError: see `Directory.with_team`; the file is left unchanged."""
        return self._edit(lambda d: d.with_team(org, team))

    def set_leadership(self, org: str, agents: Iterable[str]) -> Directory:
        """Raises: ConfigError: see `Directory.with_leadership`; the file is left unchanged."""
        agents = list(agents)
        return self._edit(lambda d: d.with_leadership(org, agents))

    def add_workspace_root(self, org: str, root: str, *, read_only: bool = False) -> Directory:
        """Raises: ConfigError: see `Directory.with_workspace_root`; the file is left unchanged."""
        return self._edit(lambda d: d.with_workspace_root(org, root, read_only=read_only))

    def remove_workspace_root(self, org: str, root: str) -> Directory:
        """Raises: ConfigError: see `Directory.without_workspace_root`; the file is left unchanged."""
        return self._edit(lambda d: d.without_workspace_root(org, root))

    def set_name(self, org: str, folder_id: str, name: str | None) -> Directory:
        return self._edit(lambda d: d.with_name(org, folder_id, name))

    def _edit(self, change: Callable[[Directory], Directory]) -> Directory:
        # Re-read under the lock so that concurrent edits from other processes are not lost.
        with locked(self.path):
            current = self.load() if self.path.exists() else Directory()
            updated = change(current)
            mode = self.path.stat().st_mode & 0o777 if self.path.exists() else 0o644
            write_atomically(self.path, updated.to_toml(), mode)
        return updated
