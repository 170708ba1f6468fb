"""Who may read, write, delete or create in an agent's or a team's file area.

One table decides: `FILE_AREA_TABLE`. `decide` only works out how the caller relates to the
folder (its owner, a teammate of the owner, leadership, ...) and looks the answer up; every
(relation, scope, folder state) combination matches exactly one row, so the order of the rows
does not matter. The same table renders as Markdown for the README
(`render_markdown_table`).

Pure: no I/O. The caller and the folder arrive as plain values built by the composition root
from the directory of organizations; whether the folder exists on disk is an input too.

A write into an area that does not exist on disk yet is a ``create``; asking for ``write`` on a
folder with ``exists=False`` is refused, because the only thing to do with a missing folder is
to create it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from homeport._folder_ids import folder_uuid
from homeport.errors import FileAreaError, PermissionDeniedError

__all__ = [
    "ACTIONS",
    "FILE_AREA_TABLE",
    "LIST_SCOPES",
    "RELATIONS",
    "SCOPES",
    "Caller",
    "FileAreaDecision",
    "Folder",
    "PolicyRow",
    "decide",
    "folder_uuid",
    "list_readable_folders",
    "relation_of",
    "render_markdown_table",
    "require",
]

Scope = Literal["private", "shared"]
Action = Literal["read", "write", "delete", "create"]
OwnerKind = Literal["agent", "team"]
ListScope = Literal["my_private", "my_shared", "team_private", "team_shared", "org_shared"]

SCOPES: tuple[Scope, ...] = ("private", "shared")
ACTIONS: tuple[Action, ...] = ("read", "write", "delete", "create")
LIST_SCOPES: tuple[ListScope, ...] = ("my_private", "my_shared", "team_private", "team_shared", "org_shared")

# How a caller relates to a folder, and how the rendered table names that relation.
RELATIONS: dict[str, str] = {
    "owner": "owner agent",
    "teammate": "owner agent's teammate",
    "leadership": "leadership (not a teammate)",
    "org_member": "other agent of the org",
    "team_member": "member of the owner team",
    "team_outsider": "non-member of the owner team (leadership too)",
    "other_org": "agent of another org",
}

_ALL = frozenset(ACTIONS)
_READ = frozenset({"read"})
_CREATE = frozenset({"create"})
_NONE: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PolicyRow:
    """One row of the table; ``*`` in `scope` or `state` matches either value."""

    relations: tuple[str, ...]
    scope: str  # "private" | "shared" | "*"
    state: str  # "exists" | "new" | "*"
    actions: frozenset[str]
    rule: str

    def matches(self, relation: str, scope: str, state: str) -> bool:
        return relation in self.relations and self.scope in ("*", scope) and self.state in ("*", state)


# One row per (relations, scope, folder state); "*" matches either value. Rows never overlap
# (a test checks it), so their order only matters for reading.
# fmt: off
FILE_AREA_TABLE: tuple[PolicyRow, ...] = (
    PolicyRow(("other_org",), "*", "*", _NONE,
              "another organization: nothing, ever"),
    PolicyRow(("owner",), "*", "exists", _ALL,
              "your own folder: you read, write, delete and create"),
    PolicyRow(("team_member",), "*", "exists", _ALL,
              "your team's folder: its members read, write, delete and create"),
    PolicyRow(("owner",), "*", "new", _CREATE,
              "a folder that does not exist yet: you may create your own, by writing its first file"),
    PolicyRow(("team_member",), "*", "new", _CREATE,
              "a folder that does not exist yet: members may create their team's, by writing its first file"),
    PolicyRow(("teammate", "leadership", "org_member", "team_outsider"), "*", "new", _NONE,
              "a folder that does not exist yet: only its owner or its team may create it"),
    PolicyRow(("teammate", "leadership"), "shared", "exists", _READ,
              "another agent's shared folder: teammates and leadership read it, only the owner changes it"),
    PolicyRow(("org_member",), "shared", "exists", _NONE,
              "another agent's shared folder: only its teammates and leadership may read it"),
    PolicyRow(("teammate", "leadership", "org_member"), "private", "exists", _NONE,
              "another agent's private folder: nobody else, leadership included"),
    PolicyRow(("team_outsider",), "shared", "exists", _READ,
              "another team's shared folder: the whole organization reads it, only members change it"),
    PolicyRow(("team_outsider",), "private", "exists", _NONE,
              "another team's private folder: nobody outside the team"),
)
# fmt: on


@dataclass(frozen=True)
class Caller:
    """The calling agent, from the principal (never from tool arguments)."""

    agent_id: str
    org: str
    team: str | None
    is_leadership: bool = False


@dataclass(frozen=True)
class Folder:
    """A folder: `owner_id` is an agent id or a team id; `owner_team` is the agent owner's team."""

    owner_kind: OwnerKind
    owner_id: str
    org: str
    owner_team: str | None = None
    exists: bool = True


@dataclass(frozen=True)
class FileAreaDecision:
    allowed: bool
    rule: str
    relation: str
    action: str
    scope: str


def relation_of(caller: Caller, folder: Folder) -> str:
    """Name how `caller` relates to `folder`: one of the keys of the table's relations."""
    # The organization is compared first so that equal ids in two organizations never match.
    if caller.org != folder.org:
        return "other_org"
    if folder.owner_kind == "team":
        return "team_member" if caller.team == folder.owner_id else "team_outsider"
    if caller.agent_id == folder.owner_id:
        return "owner"
    if caller.team is not None and caller.team == folder.owner_team:
        return "teammate"
    return "leadership" if caller.is_leadership else "org_member"


def decide(caller: Caller, folder: Folder, scope: str, action: str) -> FileAreaDecision:
    """Look up whether `caller` may do `action` in `folder`'s `scope` area.

    Raises:
        FileAreaError: `scope`, `action` or the folder's owner kind is not a known value.
    """
    if scope not in SCOPES:
        raise FileAreaError(f"scope {scope!r} is not one of: {', '.join(SCOPES)}; pass 'private' or 'shared'")
    if action not in ACTIONS:
        raise FileAreaError(f"action {action!r} is not one of: {', '.join(ACTIONS)}")
    if folder.owner_kind not in ("agent", "team"):
        raise FileAreaError(f"folder owner kind {folder.owner_kind!r} is not 'agent' or 'team'")
    relation = relation_of(caller, folder)
    state = "exists" if folder.exists else "new"
    row = next(r for r in FILE_AREA_TABLE if r.matches(relation, scope, state))
    return FileAreaDecision(action in row.actions, row.rule, relation, action, scope)


def require(caller: Caller, folder: Folder, scope: str, action: str) -> FileAreaDecision:
    """Like `decide`, but a refusal raises.

    Raises:
        PermissionDeniedError: the table refuses; the message names the folder and the rule.
        FileAreaError: as for `decide`.
    """
    decision = decide(caller, folder, scope, action)
    if not decision.allowed:
        raise PermissionDeniedError(
            f"agent {caller.agent_id!r} may not {action} in the {scope} folder of {folder.owner_kind} "
            f"{folder.owner_id!r} (organization {folder.org!r}): {decision.rule}; "
            "call list_folders to see the folders you can use"
        )
    return decision


def render_markdown_table() -> str:
    """The table as Markdown, one line per row, for the README and docs/file-area-policy.md."""

    def mark(row: PolicyRow, action: str) -> str:
        return "yes" if action in row.actions else "no"

    state_names = {"exists": "exists", "new": "not created yet", "*": "either"}
    lines = [
        "| caller | scope | folder on disk | read | write | delete | create | rule |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in FILE_AREA_TABLE:
        who = "; ".join(RELATIONS[r] for r in row.relations)
        scope = "either" if row.scope == "*" else row.scope
        marks = " | ".join(mark(row, a) for a in ACTIONS)
        lines.append(f"| {who} | {scope} | {state_names[row.state]} | {marks} | {row.rule} |")
    return "\n".join(lines) + "\n"


def _entry(org: str, folder_id: str, owner_kind: str, scope: str, names: Mapping[str, str]) -> dict[str, str]:
    display = names.get(folder_id, folder_id)
    return {
        "name": f"{display} ({owner_kind}, {scope})",
        "display_name": display,
        "uuid": folder_uuid(org, folder_id, scope),  # a folder_id too: it names this folder and scope
        "scope": scope,
        "path": f"organizations/{org}/workspaces/{folder_id}/{scope}",
        "folder_id": folder_id,
        "owner_kind": owner_kind,
    }


def list_readable_folders(
    caller: Caller,
    list_scope: str,
    *,
    agents: Mapping[str, str | None],
    teams: Iterable[str],
    names: Mapping[str, str] | None = None,
) -> list[dict[str, str]]:
    """The folders `list_folders(list_scope)` shows to `caller`, filtered through `decide`.

    `agents` maps every agent id of the caller's organization to its team (or None) and `teams`
    lists the organization's team ids: a snapshot of the directory, passed in as plain data;
    `names` holds the display names the directory gives folders (the folder id otherwise).
    Folders are listed whether or not they exist on disk yet.

    Raises:
        FileAreaError: `list_scope` is not one of `LIST_SCOPES`.
    """
    if list_scope not in LIST_SCOPES:
        raise FileAreaError(f"list scope {list_scope!r} is not one of: {', '.join(LIST_SCOPES)}")
    org = caller.org
    shown = names or {}
    if list_scope in ("my_private", "my_shared"):
        scope = "private" if list_scope == "my_private" else "shared"
        return [_entry(org, caller.agent_id, "agent", scope, shown)]
    if list_scope in ("team_private", "team_shared"):
        if caller.team is None:
            return []
        scope = "private" if list_scope == "team_private" else "shared"
        return [_entry(org, caller.team, "team", scope, shown)]
    candidates = [Folder("team", team, org) for team in sorted(set(teams))]
    candidates += [Folder("agent", agent, org, team) for agent, team in sorted(agents.items())]
    return [
        _entry(org, f.owner_id, f.owner_kind, "shared", shown)
        for f in candidates
        if decide(caller, f, "shared", "read").allowed
    ]
