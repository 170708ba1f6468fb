"""The access rules in the pipeline's access step, in memory: every tool, every call, fail closed."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from homeport.core.access import canonical_pattern
from homeport.errors import ConfigError

pytestmark = pytest.mark.anyio


@contextlib.contextmanager
def as_principal(sub: str, **claims: Any) -> Iterator[None]:
    """What the bearer middleware does for a verified JWT; the in-memory server task inherits it."""
    token = AccessToken(token="jwt", client_id=sub, scopes=[], subject=sub, claims={"sub": sub, **claims})
    reset = auth_context_var.set(AuthenticatedUser(token))
    try:
        yield
    finally:
        auth_context_var.reset(reset)


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    tmp = Path(os.path.realpath(tmp_path))
    for name in ("acme/app", "beta/app"):
        (tmp / name / ".git").mkdir(parents=True)
    rules = tmp / "rules.toml"
    rules.write_text(
        f"""
[[tools]]
name = "bots"
who = "group:bots"
allow = ["get_decisions"]

[[workspaces]]
name = "acme"
who = "*"
paths = ["{tmp}/acme/**"]
access = "write"
"""
    )
    return {"tmp": tmp, "rules": rules, "app": tmp / "acme" / "app", "beta": tmp / "beta" / "app"}


def _server(server_factory, world):
    return server_factory(
        transport="http",
        auth=True,
        allow_roots=(world["tmp"],),
        data_dir=world["tmp"] / "data",
        directory_file=world["tmp"] / "data" / "directory.toml",
        access_rules_file=world["rules"],
    )


def _code(result) -> str:
    assert result.is_error, result.content[0].text
    return result.structured_content["error"]["code"]


async def test_the_allowlist_bounds_tools_without_a_workspace_too(server_factory, world):
    with as_principal("bot", groups=["bots"]):
        async with Client(_server(server_factory, world)) as c:
            assert _code(await c.call_tool("list_folders", {"scope": "my_private"})) == "tool_not_allowed"
            assert _code(await c.call_tool("where_am_i", {"workspace": str(world["app"])})) == "tool_not_allowed"
            assert not (await c.call_tool("get_decisions", {"workspace": str(world["app"])})).is_error


async def test_rules_replace_the_directory_roots(server_factory, world):
    # No directory at all: without rules every agent would be refused; the rules grant acme.
    with as_principal("ada"):
        async with Client(_server(server_factory, world)) as c:
            assert not (await c.call_tool("log_decision", {"summary": "x", "workspace": str(world["app"])})).is_error
            beta = await c.call_tool("log_decision", {"summary": "x", "workspace": str(world["beta"])})
            assert _code(beta) == "workspace_access_denied"


async def test_a_rules_file_broken_while_serving_refuses_every_call_until_fixed(server_factory, world):
    server = _server(server_factory, world)
    good = world["rules"].read_text()
    with as_principal("ada"):
        async with Client(server) as c:
            world["rules"].write_text(good + "\n[[workspaces]\n")
            broken = await c.call_tool("get_decisions", {"workspace": str(world["app"])})
            assert _code(broken) == "config_error" and "not valid TOML" in broken.content[0].text
            world["rules"].write_text(good)
            assert not (await c.call_tool("get_decisions", {"workspace": str(world["app"])})).is_error


async def test_without_auth_the_rules_do_not_apply(server_factory, world):
    server = server_factory(transport="http", auth=False, allow_roots=(world["tmp"],), access_rules_file=world["rules"])
    async with Client(server) as c:
        assert not (await c.call_tool("log_decision", {"summary": "x", "workspace": str(world["beta"])})).is_error


def test_a_rules_file_that_cannot_be_read_stops_the_server_from_starting(server_factory, world):
    world["rules"].unlink()
    with pytest.raises(ConfigError, match="cannot be read"):
        _server(server_factory, world)


def test_a_patterns_literal_directories_are_resolved_like_workspaces(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    resolved = os.path.realpath(real)
    assert canonical_pattern(f"{tmp_path}/alias/**") == f"{resolved}/**"
    assert canonical_pattern(f"{tmp_path}/alias") == resolved
    assert canonical_pattern("acme/*") == "acme/*"


def test_a_rule_may_name_a_workspace_by_its_logical_key(tmp_path):
    from homeport.core.access import AccessRulesFile, WorkspaceAccess
    from homeport.errors import WorkspaceAccessDeniedError

    rules = tmp_path / "rules.toml"
    rules.write_text('[[workspaces]]\nwho = "ada"\npaths = ["github.com/acme/*"]\naccess = "read"\n')
    access = WorkspaceAccess(auth=True, rules=AccessRulesFile(rules))
    access.check("ada", tmp_path / "api", write=False, key="github.com/acme/api")
    with pytest.raises(WorkspaceAccessDeniedError, match="read-only"):
        access.check("ada", tmp_path / "api", write=True, key="github.com/acme/api")
    with pytest.raises(WorkspaceAccessDeniedError, match="no workspace rule"):
        access.check("ada", tmp_path / "api", write=False, key="github.com/beta/api")
