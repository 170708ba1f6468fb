"""A server of logical workspaces (`--logical-workspaces`): keys from every source, never paths; tools that
need a directory say so; each key's memory under the data directory; handles and the session keep the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from homeport.cli.main import cli
from homeport.store.logical import logical_store_root

pytestmark = pytest.mark.anyio


def _code(result) -> str:
    assert result.is_error, result.content[0].text
    return str(result.structured_content["error"]["code"])


@pytest.fixture
def logical(server_factory, tmp_path: Path):
    data = tmp_path / "data"
    return data, server_factory(transport="http", logical_workspaces=True, data_dir=data, allow_roots=(tmp_path,))


async def test_a_key_names_its_own_memory_under_the_data_directory(logical) -> None:
    data, server = logical
    async with Client(server) as c:
        written = await c.call_tool("log_decision", {"workspace": "acme/api", "summary": "one"})
        assert not written.is_error, written.content[0].text
        assert written.structured_content["workspace"] == {"key": "acme/api", "source": "argument"}
        other = await c.call_tool("get_decisions", {"workspace": "acme/web"})
        assert other.structured_content["decisions"] == []
        same = await c.call_tool("get_decisions", {"workspace": "acme/api"})
        assert [d["summary"] for d in same.structured_content["decisions"]] == ["one"]
    assert (logical_store_root(data.resolve(), "acme/api") / ".homeport" / "homeport.db").is_file()


def test_keys_that_differ_only_in_case_or_slashes_get_different_stores(tmp_path: Path) -> None:
    names = {logical_store_root(tmp_path, k).name.lower() for k in ("acme/api", "Acme/api", "acme~api", "acme/api.x")}
    assert len(names) == 4
    assert all(logical_store_root(tmp_path, k).parent == tmp_path / "logical-workspaces" for k in ("a", "a/b/c"))


async def test_a_path_is_refused_with_a_message_that_says_to_use_a_key(logical, tmp_path) -> None:
    _, server = logical
    project = tmp_path / "api"
    (project / ".git").mkdir(parents=True)
    async with Client(server) as c:
        for value in (str(project), project.as_uri()):
            refused = await c.call_tool("get_decisions", {"workspace": value})
            assert _code(refused) == "invalid_workspace"
            assert value in refused.content[0].text and "logical workspaces" in refused.content[0].text
    assert not (project / ".homeport").exists()


async def test_tools_that_need_the_projects_directory_are_not_available(logical) -> None:
    _, server = logical
    async with Client(server) as c:
        for tool, args in (
            ("get_tables", {}),
            ("run_query", {"query": "SELECT 1"}),
            ("export", {}),
            ("import_from", {"kind": "markdown", "source": "CLAUDE.md"}),
        ):
            refused = await c.call_tool(tool, {"workspace": "acme/api", **args})
            assert _code(refused) == "logical_workspace", tool
            assert tool in refused.content[0].text and "not available for logical workspaces" in refused.content[0].text


async def test_use_workspace_hands_out_a_handle_that_names_the_key(logical) -> None:
    _, server = logical
    async with Client(server) as c:
        chosen = await c.call_tool("use_workspace", {"workspace": "acme/api"})
        handle = chosen.structured_content["handle"]
        assert chosen.structured_content["key"] == "acme/api"
        await c.call_tool("log_decision", {"workspace": handle, "summary": "via handle"})
        read = await c.call_tool("get_decisions", {"workspace": "acme/api"})
        assert [d["summary"] for d in read.structured_content["decisions"]] == ["via handle"]
        where = await c.call_tool("where_am_i", {"workspace": "acme/api"})
        assert where.structured_content["project_key"] == "acme/api"


async def test_without_the_flag_a_key_is_still_refused_as_a_relative_path(server_factory, tmp_path) -> None:
    server = server_factory(transport="http", allow_roots=(tmp_path,), data_dir=tmp_path / "data")
    async with Client(server) as c:
        refused = await c.call_tool("get_decisions", {"workspace": "acme/api"})
        assert _code(refused) == "invalid_workspace" and "relative path" in refused.content[0].text


def test_the_flag_applies_to_http_only() -> None:
    done = CliRunner().invoke(cli, ["serve", "--logical-workspaces"])
    assert done.exit_code == 2 and "--logical-workspaces applies to --http" in done.output


def test_a_shell_command_in_a_team_project_without_a_token_names_it_rather_than_writing_locally(
    tmp_path, shell_home
) -> None:
    root = tmp_path / "api"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", "git@github.com:acme/api.git"], check=True)
    (root / ".homeport").mkdir()
    (root / ".homeport" / "config.toml").write_text(
        '[team]\nurl = "http://127.0.0.1:9"\ntoken_env = "HOMEPORT_TEAM_TOKEN"\n', encoding="utf-8"
    )
    # A repository's team server is used once the user trusts it, with the token's source they choose.
    trusted = subprocess.run(
        [sys.executable, "-m", "homeport", "trust", "--project", str(root), "--token-env", "HOMEPORT_TEAM_TOKEN"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert trusted.returncode == 0, trusted.stderr
    done = subprocess.run(
        [sys.executable, "-m", "homeport", "decisions", "add", "x", "-w", str(root)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "http://127.0.0.1:9" in done.stderr and "HOMEPORT_TEAM_TOKEN" in done.stderr
    assert not (root / ".homeport" / "homeport.db").exists()
