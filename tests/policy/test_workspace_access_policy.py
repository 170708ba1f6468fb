"""Which workspaces an authenticated agent may use: only those inside its organization's roots."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.errors import PermissionDeniedError, WorkspaceAccessDeniedError
from homeport.policy import workspace_access
from homeport.policy.workspace_access import OrgWorkspaceRoots, decide_workspace, require_workspace

P = PurePosixPath
ACME = OrgWorkspaceRoots("acme", read_write=(P("/srv/acme"),), read_only=(P("/srv/shared"),))


def test_a_workspace_inside_a_root_is_allowed_for_reads_and_writes() -> None:
    for write in (False, True):
        decision = decide_workspace(ACME, P("/srv/acme/app"), write=write)
        assert decision.allowed and decision.root == P("/srv/acme")


def test_the_root_itself_is_inside_it() -> None:
    assert decide_workspace(ACME, P("/srv/acme"), write=True).allowed


def test_a_sibling_sharing_the_string_prefix_is_outside() -> None:
    decision = decide_workspace(ACME, P("/srv/acme-evil/app"), write=False)
    assert not decision.allowed and decision.root is None


def test_a_read_only_root_allows_reads_and_refuses_writes_naming_how_to_grant() -> None:
    assert decide_workspace(ACME, P("/srv/shared/lib"), write=False).allowed
    with pytest.raises(WorkspaceAccessDeniedError) as info:
        require_workspace("ada", ACME, P("/srv/shared/lib"), write=True)
    assert info.value.code == "workspace_access_denied"
    assert "read-only" in info.value.message and "add-workspace-root acme /srv/shared" in info.value.message


def test_an_org_without_roots_is_refused_with_the_command_that_grants_one() -> None:
    with pytest.raises(WorkspaceAccessDeniedError) as info:
        require_workspace("ada", OrgWorkspaceRoots("acme"), P("/srv/acme/app"), write=False)
    assert isinstance(info.value, PermissionDeniedError)
    assert "homeport directory add-workspace-root acme DIR" in info.value.message
    assert "ada" in info.value.message


def test_outside_every_root_names_the_workspace_and_the_roots() -> None:
    with pytest.raises(WorkspaceAccessDeniedError) as info:
        require_workspace("ada", ACME, P("/home/ada/app"), write=False)
    message = info.value.message
    assert "/home/ada/app" in message and "/srv/acme" in message and "/srv/shared" in message


_NAMES = st.sampled_from(["srv", "acme", "beta", "app", "a", "acme-evil", "x"])
_PATHS = st.lists(_NAMES, min_size=0, max_size=4).map(lambda parts: P("/", *parts))


@given(
    orgs=st.dictionaries(
        st.sampled_from(["acme", "beta", "gamma"]),
        st.tuples(st.lists(_PATHS, max_size=3), st.lists(_PATHS, max_size=3)),
        min_size=1,
    ),
    workspace=_PATHS,
    write=st.booleans(),
    data=st.data(),
)
def test_an_accepted_workspace_is_always_inside_the_callers_own_org_roots(orgs, workspace, write, data) -> None:
    caller_org = data.draw(st.sampled_from(sorted(orgs)))
    rw, ro = orgs[caller_org]
    roots = OrgWorkspaceRoots(caller_org, read_write=tuple(rw), read_only=tuple(ro))
    decision = decide_workspace(roots, workspace, write=write)
    inside_rw = any(workspace.is_relative_to(r) for r in rw)
    inside_ro = any(workspace.is_relative_to(r) for r in ro)
    assert decision.allowed == (inside_rw or (inside_ro and not write))
    if decision.allowed:
        assert decision.root is not None and workspace.is_relative_to(decision.root)
        assert decision.root in (rw if write else rw + ro)
        # Another organization's roots never count: only the caller's own ones were passed in.
        assert decision.root in rw + ro


def test_exports_are_pinned() -> None:
    assert sorted(workspace_access.__all__) == [
        "OrgWorkspaceRoots",
        "WorkspaceAccessDecision",
        "decide_workspace",
        "require_workspace",
    ]
