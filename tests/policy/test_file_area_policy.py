"""The file-area table, checked exhaustively against expectations written here from the rules.

Two independent oracles: `EXPECTED` spells out, per named role, what each may do; `allowed_by_rules`
restates the rules as plain conditions and is also run on random callers and folders.
"""

from __future__ import annotations

import ast
import itertools
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.errors import FileAreaError, PermissionDeniedError
from homeport.policy import file_areas
from homeport.policy.file_areas import (
    ACTIONS,
    FILE_AREA_TABLE,
    RELATIONS,
    SCOPES,
    Caller,
    Folder,
    decide,
    folder_uuid,
    list_readable_folders,
    render_markdown_table,
    require,
)

ORG, OTHER_ORG = "acme", "globex"
ANN = Caller("ann", ORG, "platform")  # owns the agent folder below
ANN_FOLDER = Folder("agent", "ann", ORG, owner_team="platform")
PLATFORM_FOLDER = Folder("team", "platform", ORG)

# Callers by role, each paired with the folder it is tested against.
AGENT_ROLES: dict[str, Caller] = {
    "owner": ANN,
    "teammate": Caller("bob", ORG, "platform"),
    "leadership": Caller("lea", ORG, "data", is_leadership=True),
    "leadership_teammate": Caller("lou", ORG, "platform", is_leadership=True),
    "leadership_without_team": Caller("lex", ORG, None, is_leadership=True),
    "non_teammate": Caller("dan", ORG, "data"),
    "teamless_agent": Caller("tom", ORG, None),
    "other_org": Caller("oz", OTHER_ORG, "platform", is_leadership=True),
    # The same agent id in another organization is still another organization.
    "other_org_same_id": Caller("ann", OTHER_ORG, "platform"),
}
TEAM_ROLES: dict[str, Caller] = {
    "member": Caller("bob", ORG, "platform"),
    "non_member": Caller("dan", ORG, "data"),
    "teamless_agent": Caller("tom", ORG, None),
    "leadership_not_in_team": Caller("lea", ORG, "data", is_leadership=True),
    "leadership_in_team": Caller("lou", ORG, "platform", is_leadership=True),
    "other_org": Caller("oz", OTHER_ORG, "data", is_leadership=True),
    # A team with the same id in another organization is not this team.
    "other_org_same_team_id": Caller("pam", OTHER_ORG, "platform"),
}

ALL, READ, NONE = "rwdc", "r", ""
# (folder kind, role, scope) -> allowed actions as letters, for folders that exist.
EXPECTED: dict[tuple[str, str, str], str] = {
    ("agent", "owner", "private"): ALL,
    ("agent", "owner", "shared"): ALL,
    ("agent", "teammate", "private"): NONE,
    ("agent", "teammate", "shared"): READ,
    ("agent", "leadership", "private"): NONE,
    ("agent", "leadership", "shared"): READ,
    ("agent", "leadership_teammate", "private"): NONE,
    ("agent", "leadership_teammate", "shared"): READ,
    ("agent", "leadership_without_team", "private"): NONE,
    ("agent", "leadership_without_team", "shared"): READ,
    ("agent", "non_teammate", "private"): NONE,
    ("agent", "non_teammate", "shared"): NONE,
    ("agent", "teamless_agent", "private"): NONE,
    ("agent", "teamless_agent", "shared"): NONE,
    ("agent", "other_org", "private"): NONE,
    ("agent", "other_org", "shared"): NONE,
    ("agent", "other_org_same_id", "private"): NONE,
    ("agent", "other_org_same_id", "shared"): NONE,
    ("team", "member", "private"): ALL,
    ("team", "member", "shared"): ALL,
    ("team", "leadership_in_team", "private"): ALL,
    ("team", "leadership_in_team", "shared"): ALL,
    ("team", "non_member", "private"): NONE,
    ("team", "non_member", "shared"): READ,
    ("team", "teamless_agent", "private"): NONE,
    ("team", "teamless_agent", "shared"): READ,
    ("team", "leadership_not_in_team", "private"): NONE,
    ("team", "leadership_not_in_team", "shared"): READ,
    ("team", "other_org", "private"): NONE,
    ("team", "other_org", "shared"): NONE,
    ("team", "other_org_same_team_id", "private"): NONE,
    ("team", "other_org_same_team_id", "shared"): NONE,
}
# Folders not created yet: only the owner, or the owning team's members, may create them.
CREATORS = {("agent", "owner"), ("team", "member"), ("team", "leadership_in_team")}


def _cases() -> list[tuple[str, str, Caller, Folder, str, str, bool]]:
    cases = []
    for kind, roles, folder in (("agent", AGENT_ROLES, ANN_FOLDER), ("team", TEAM_ROLES, PLATFORM_FOLDER)):
        for (role, caller), scope, action, exists in itertools.product(roles.items(), SCOPES, ACTIONS, (True, False)):
            if exists:
                allowed = action[0] in EXPECTED[(kind, role, scope)]
            else:
                allowed = action == "create" and (kind, role) in CREATORS
            target = Folder(folder.owner_kind, folder.owner_id, folder.org, folder.owner_team, exists)
            cases.append((kind, role, caller, target, scope, action, allowed))
    return cases


def allowed_by_rules(caller: Caller, folder: Folder, scope: str, action: str) -> bool:
    """The file-area rules of docs/architecture.md, restated without the table."""
    if caller.org != folder.org:
        return False
    own = (folder.owner_kind == "agent" and folder.owner_id == caller.agent_id) or (
        folder.owner_kind == "team" and folder.owner_id == caller.team
    )
    if not folder.exists:
        return own and action == "create"
    if own:
        return True
    if action != "read" or scope == "private":
        return False
    if folder.owner_kind == "team":
        return True
    return caller.is_leadership or (caller.team is not None and caller.team == folder.owner_team)


CASES = _cases()


def test_the_expectation_covers_every_role_and_scope() -> None:
    roles = {("agent", r) for r in AGENT_ROLES} | {("team", r) for r in TEAM_ROLES}
    assert {(k, r, s) for (k, r) in roles for s in SCOPES} == set(EXPECTED)
    assert len(CASES) == len(roles) * len(SCOPES) * len(ACTIONS) * 2


@pytest.mark.parametrize(
    ("kind", "role", "caller", "folder", "scope", "action", "allowed"),
    CASES,
    ids=[f"{c[0]}-{c[1]}-{c[4]}-{c[5]}-{'exists' if c[3].exists else 'new'}" for c in CASES],
)
def test_every_role_scope_and_action_gets_the_expected_answer(
    kind: str, role: str, caller: Caller, folder: Folder, scope: str, action: str, allowed: bool
) -> None:
    decision = decide(caller, folder, scope, action)
    assert decision.allowed is allowed
    assert allowed_by_rules(caller, folder, scope, action) is allowed
    assert decision.rule


_ids = st.sampled_from(["ann", "bob", "platform", "data"])


@given(
    caller=st.builds(Caller, _ids, st.sampled_from([ORG, OTHER_ORG]), st.none() | _ids, st.booleans()),
    folder=st.builds(
        Folder,
        st.sampled_from(["agent", "team"]),
        _ids,
        st.sampled_from([ORG, OTHER_ORG]),
        st.none() | _ids,
        st.booleans(),
    ),
    scope=st.sampled_from(SCOPES),
    action=st.sampled_from(ACTIONS),
)
def test_random_callers_and_folders_agree_with_the_rules(
    caller: Caller, folder: Folder, scope: str, action: str
) -> None:
    assert decide(caller, folder, scope, action).allowed is allowed_by_rules(caller, folder, scope, action)


def test_every_combination_matches_exactly_one_row_of_the_table() -> None:
    for relation, scope, state in itertools.product(RELATIONS, SCOPES, ("exists", "new")):
        matching = [row for row in FILE_AREA_TABLE if row.matches(relation, scope, state)]
        assert len(matching) == 1, (relation, scope, state, matching)


def test_every_row_of_the_table_is_reachable() -> None:
    used = {decide(caller, folder, scope, action).rule for *_, caller, folder, scope, action, _ in CASES}
    assert used == {row.rule for row in FILE_AREA_TABLE}


def test_leadership_is_refused_another_agents_private_folder_and_the_decision_names_the_rule() -> None:
    decision = decide(AGENT_ROLES["leadership"], ANN_FOLDER, "private", "read")
    assert not decision.allowed
    assert decision.rule == "another agent's private folder: nobody else, leadership included"
    assert decision.relation == "leadership"


def test_teammate_can_read_but_not_write_agent_shared_folder() -> None:
    bob = AGENT_ROLES["teammate"]
    assert decide(bob, ANN_FOLDER, "shared", "read").allowed
    write = decide(bob, ANN_FOLDER, "shared", "write")
    assert not write.allowed
    assert "only the owner changes it" in write.rule


def test_another_organization_is_refused_with_its_own_rule() -> None:
    decision = decide(AGENT_ROLES["other_org"], PLATFORM_FOLDER, "shared", "read")
    assert (decision.allowed, decision.rule) == (False, "another organization: nothing, ever")


def test_require_raises_permission_denied_naming_the_folder_and_the_rule() -> None:
    with pytest.raises(PermissionDeniedError) as info:
        require(TEAM_ROLES["non_member"], PLATFORM_FOLDER, "private", "read")
    assert info.value.code == "permission_denied"
    assert "'platform'" in info.value.message
    assert "another team's private folder: nobody outside the team" in info.value.message
    assert require(TEAM_ROLES["member"], PLATFORM_FOLDER, "private", "write").allowed


@pytest.mark.parametrize(("scope", "action"), [("public", "read"), ("shared", "rename")])
def test_unknown_scope_or_action_is_an_error_naming_it(scope: str, action: str) -> None:
    with pytest.raises(FileAreaError, match=scope if scope == "public" else action):
        decide(ANN, ANN_FOLDER, scope, action)


def test_the_markdown_table_has_one_line_per_row_and_names_every_rule() -> None:
    table = render_markdown_table()
    lines = table.strip().splitlines()
    assert len(lines) == 2 + len(FILE_AREA_TABLE)
    for row in FILE_AREA_TABLE:
        assert row.rule in table


def test_docs_file_area_policy_holds_the_current_table() -> None:
    doc = Path(__file__).parents[2] / "docs" / "file-area-policy.md"
    assert render_markdown_table() in doc.read_text(encoding="utf-8"), (
        "docs/file-area-policy.md is stale: paste the output of "
        "homeport.policy.file_areas.render_markdown_table() into it"
    )


def test_the_policy_module_imports_nothing_that_does_io() -> None:
    tree = ast.parse(Path(file_areas.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported <= {
        "__future__",
        "json",
        "uuid",
        "collections.abc",
        "dataclasses",
        "typing",
        "homeport.errors",
        "homeport._folder_ids",  # uuid + json only: the area uuid, shared with files.directory
    }


# list_folders ---------------------------------------------------------------------------

AGENTS = {"ann": "platform", "bob": "platform", "dan": "data", "lea": "data", "tom": None}
TEAMS = ["platform", "data", "empty"]


def _listed(caller: Caller, scope: str) -> list[str]:
    return [e["folder_id"] for e in list_readable_folders(caller, scope, agents=AGENTS, teams=TEAMS)]


def test_my_scopes_list_only_the_callers_own_folder() -> None:
    (entry,) = list_readable_folders(ANN, "my_private", agents=AGENTS, teams=TEAMS)
    assert entry == {
        "name": "ann (agent, private)",
        "display_name": "ann",  # the folder id, without a name in the directory
        "uuid": folder_uuid(ORG, "ann", "private"),
        "scope": "private",
        "path": "organizations/acme/workspaces/ann/private",
        "folder_id": "ann",
        "owner_kind": "agent",
    }
    assert _listed(ANN, "my_shared") == ["ann"]


def test_team_scopes_list_the_callers_team_or_nothing_without_a_team() -> None:
    assert _listed(ANN, "team_private") == ["platform"]
    assert _listed(ANN, "team_shared") == ["platform"]
    assert _listed(Caller("tom", ORG, None), "team_shared") == []


def test_org_shared_lists_every_team_and_the_agents_the_caller_may_read() -> None:
    assert _listed(ANN, "org_shared") == ["data", "empty", "platform", "ann", "bob"]
    assert _listed(Caller("tom", ORG, None), "org_shared") == ["data", "empty", "platform", "tom"]
    leader = Caller("lea", ORG, "data", is_leadership=True)
    assert _listed(leader, "org_shared") == ["data", "empty", "platform", "ann", "bob", "dan", "lea", "tom"]
    entries = list_readable_folders(ANN, "org_shared", agents=AGENTS, teams=TEAMS)
    assert {e["scope"] for e in entries} == {"shared"}


def test_unknown_list_scope_is_an_error_naming_it() -> None:
    with pytest.raises(FileAreaError, match="everything"):
        list_readable_folders(ANN, "everything", agents=AGENTS, teams=TEAMS)


def test_folder_uuid_is_stable_and_distinct_per_org_folder_and_scope() -> None:
    assert folder_uuid("acme", "ann", "shared") == folder_uuid("acme", "ann", "shared")
    assert uuid.UUID(folder_uuid("acme", "ann", "shared")).version == 5
    triples = [
        ("acme", "ann", "shared"),
        ("acme", "ann", "private"),
        ("globex", "ann", "shared"),
        ("acme", "bob", "shared"),
    ]
    assert len({folder_uuid(*t) for t in triples}) == len(triples)


def test_exports_are_pinned() -> None:
    assert sorted(file_areas.__all__) == [
        "ACTIONS",
        "Caller",
        "FILE_AREA_TABLE",
        "FileAreaDecision",
        "Folder",
        "LIST_SCOPES",
        "PolicyRow",
        "RELATIONS",
        "SCOPES",
        "decide",
        "folder_uuid",
        "list_readable_folders",
        "relation_of",
        "render_markdown_table",
        "require",
    ]
