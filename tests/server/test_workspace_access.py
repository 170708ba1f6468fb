"""Under --auth an agent may use only workspaces inside its organization's roots; without auth, the guards alone."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from homeport.core.access import WorkspaceAccess
from homeport.core.file_access import DirectoryCache
from homeport.errors import ConfigError, PermissionDeniedError, WorkspaceAccessDeniedError
from homeport.files.directory import Directory, DirectoryFile, Organization

pytestmark = pytest.mark.anyio


def make_project(base: Path, name: str) -> Path:
    root = base / name
    (root / ".git").mkdir(parents=True)
    return root


@contextlib.contextmanager
def as_agent(agent: str) -> Iterator[None]:
    """What the bearer middleware does for a verified token; the in-memory server task inherits it."""
    token = AccessToken(token="hp_test", client_id=agent, scopes=[], subject=agent)
    reset = auth_context_var.set(AuthenticatedUser(token))
    try:
        yield
    finally:
        auth_context_var.reset(reset)


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "data"
    d = DirectoryFile(data / "directory.toml")
    d.add_organization("acme")
    d.add_agent("acme", "ada")
    d.add_agent("acme", "local")  # a token subject that happens to be named like the local user
    d.add_workspace_root("acme", str(tmp_path / "acme"))
    d.add_workspace_root("acme", str(tmp_path / "shared"), read_only=True)
    d.add_organization("beta")
    d.add_agent("beta", "bea")
    d.add_organization("empty")
    d.add_agent("empty", "eve")
    return {
        "data": data,
        "directory": d.path,
        "mine": make_project(tmp_path / "acme", "app"),
        "shared": make_project(tmp_path / "shared", "lib"),
        "elsewhere": make_project(tmp_path / "beta", "app"),
    }


def _server(server_factory, world, tmp_path: Path, *, auth: bool):
    return server_factory(
        transport="http",
        auth=auth,
        allow_roots=(tmp_path,),
        data_dir=world["data"],
        directory_file=world["directory"],
    )


def _error(result) -> str:
    assert result.is_error, result.content[0].text
    return result.structured_content["error"]["code"]


async def _log(c: Client, workspace: Path):
    return await c.call_tool("log_decision", {"summary": "x", "workspace": str(workspace)})


async def test_an_agent_uses_workspaces_inside_its_orgs_roots_and_no_others(server_factory, world, tmp_path):
    server = _server(server_factory, world, tmp_path, auth=True)
    with as_agent("ada"):
        async with Client(server) as c:
            assert not (await _log(c, world["mine"])).is_error
            refused = await _log(c, world["elsewhere"])
            assert _error(refused) == "workspace_access_denied"
            assert str(world["elsewhere"]) in refused.content[0].text
            assert not (world["elsewhere"] / ".homeport").exists()


async def test_a_read_only_root_serves_reads_and_refuses_writes(server_factory, world, tmp_path):
    server = _server(server_factory, world, tmp_path, auth=True)
    with as_agent("ada"):
        async with Client(server) as c:
            read = await c.call_tool("get_decisions", {"workspace": str(world["shared"])})
            assert not read.is_error, read.content[0].text
            assert _error(await _log(c, world["shared"])) == "workspace_access_denied"


async def test_an_org_without_roots_is_told_how_to_grant_one(server_factory, world, tmp_path):
    server = _server(server_factory, world, tmp_path, auth=True)
    with as_agent("eve"):
        async with Client(server) as c:
            refused = await _log(c, world["mine"])
            assert _error(refused) == "workspace_access_denied"
            assert "homeport directory add-workspace-root empty DIR" in refused.content[0].text


async def test_an_agent_missing_from_the_directory_is_refused(server_factory, world, tmp_path):
    server = _server(server_factory, world, tmp_path, auth=True)
    with as_agent("ghost"):
        async with Client(server) as c:
            refused = await _log(c, world["mine"])
            assert _error(refused) == "workspace_access_denied"
            assert "ghost" in refused.content[0].text and "add-agent" in refused.content[0].text


async def test_a_token_for_an_agent_named_local_is_still_an_agent(server_factory, world, tmp_path):
    server = _server(server_factory, world, tmp_path, auth=True)
    with as_agent("local"):
        async with Client(server) as c:
            assert not (await _log(c, world["mine"])).is_error
            assert _error(await _log(c, world["elsewhere"])) == "workspace_access_denied"


async def test_without_auth_the_local_user_is_bounded_by_the_guards_alone(server_factory, world, tmp_path):
    server = _server(server_factory, world, tmp_path, auth=False)
    async with Client(server) as c:
        for workspace in (world["mine"], world["elsewhere"], world["shared"]):
            assert not (await _log(c, workspace)).is_error


async def test_a_refused_workspace_cannot_become_a_handle(server_factory, world, tmp_path):
    server = _server(server_factory, world, tmp_path, auth=True)
    with as_agent("ada"):
        async with Client(server) as c:
            r = await c.call_tool("use_workspace", {"workspace": str(world["elsewhere"])})
            assert _error(r) == "workspace_access_denied"


# The access step alone ---------------------------------------------------------------------


def test_a_broken_directory_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "directory.toml"
    path.write_text("[organizations.acme\n", encoding="utf-8")
    access = WorkspaceAccess(DirectoryCache(path), auth=True)
    with pytest.raises(ConfigError):
        access.check("ada", tmp_path, write=False)


def test_no_directory_under_auth_refuses_everyone(tmp_path: Path) -> None:
    access = WorkspaceAccess(DirectoryCache(tmp_path / "missing.toml"), auth=True)
    with pytest.raises(PermissionDeniedError):
        access.check("ada", tmp_path, write=False)


def test_roots_are_compared_after_resolving_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "app").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(real)
    d = Directory([Organization("acme", agents={"ada": None}, workspace_roots=(str(tmp_path / "alias"),))])
    access = WorkspaceAccess(_Fixed(d), auth=True)
    access.check("ada", real / "app", write=True)  # the workspace arrives canonical from the resolver


class _Fixed(DirectoryCache):
    def __init__(self, directory: Directory) -> None:
        super().__init__(None)
        self._directory = directory


_ORGS = ("acme", "beta", "gamma")
_DIRS = st.sampled_from(["a", "b", "a/x", "b/y", "a/x/z", "c"])


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    grants=st.dictionaries(
        st.sampled_from(_ORGS), st.tuples(st.sets(_DIRS, max_size=3), st.sets(_DIRS, max_size=2)), min_size=1
    ),
    caller=st.sampled_from(_ORGS),
    workspace=_DIRS,
    write=st.booleans(),
)
def test_an_accepted_workspace_is_always_inside_the_callers_org_roots(
    tmp_path: Path, grants, caller: str, workspace: str, write: bool
) -> None:
    base = Path(os.path.realpath(tmp_path))
    orgs = []
    for org in _ORGS:
        rw, ro = grants.get(org, (set(), set()))
        orgs.append(
            Organization(
                org,
                agents={f"agent-{org}": None},
                workspace_roots=tuple(str(base / r) for r in sorted(rw)),
                read_only_workspace_roots=tuple(str(base / r) for r in sorted(ro - rw)),
            )
        )
    access = WorkspaceAccess(_Fixed(Directory(orgs)), auth=True)
    target = base / workspace
    own = next(o for o in orgs if o.name == caller)
    allowed = [Path(r) for r in own.workspace_roots]
    if not write:
        allowed += [Path(r) for r in own.read_only_workspace_roots]
    try:
        access.check(f"agent-{caller}", target, write=write)
    except WorkspaceAccessDeniedError:
        assert not any(target.is_relative_to(r) for r in allowed)
    else:
        assert any(target.is_relative_to(r) for r in allowed)
