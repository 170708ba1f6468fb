"""The `uuid` list_folders returns is a valid folder_id, and folders have display names.

The uuid names one area (organization, folder, scope): a uuid with the other scope, of another
organization, or made up, is refused and never falls back to some other folder.
"""

from __future__ import annotations

import uuid

import pytest
from click.testing import CliRunner
from mcp import Client

from homeport.cli import cli
from homeport.errors import ConfigError
from homeport.files.directory import Directory, DirectoryFile

pytestmark = pytest.mark.anyio


@pytest.fixture
def directory(tmp_path):
    d = DirectoryFile(tmp_path / "data" / "directory.toml")
    d.add_organization("acme")
    d.add_team("acme", "platform")
    d.add_agent("acme", "ada", "platform")
    d.add_agent("acme", "bob", "platform")
    d.add_organization("beta")
    d.add_agent("beta", "zed")
    return d.path


def _server(server_factory, directory, tmp_path, agent="ada"):
    return server_factory(agent=agent, data_dir=tmp_path / "data", directory_file=directory)


async def _folder(c: Client, scope: str) -> dict:
    r = await c.call_tool("list_folders", {"scope": scope})
    assert not r.is_error, r.content[0].text
    return r.structured_content["folders"][0]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_uuid_list_folders_returns_is_a_folder_id_for_every_file_tool(
    server_factory, directory, tmp_path, mode
):
    async with Client(_server(server_factory, directory, tmp_path), mode=mode) as c:
        mine = await _folder(c, "my_private")
        args = {"folder_id": mine["uuid"], "scope": "private", "path": "plan.md"}
        written = await c.call_tool("write_file_by_id", {**args, "content": "hello"})
        assert not written.is_error, written.content[0].text
        assert written.structured_content["area"]["folder_id"] == "ada"
        assert (tmp_path / "data/organizations/acme/workspaces/ada/private/plan.md").read_text() == "hello"
        read = await c.call_tool("read_file_by_id", args)
        assert read.structured_content["content"] == "hello"
        info = await c.call_tool("get_file_info_by_id", args)
        assert info.structured_content["size"] == 5
        listed = await c.call_tool("list_files", {"folder_id": mine["uuid"], "scope": "private"})
        assert [e["path"] for e in listed.structured_content["entries"]] == ["plan.md"]
        team = await _folder(c, "team_shared")
        shared = await c.call_tool(
            "write_file_by_id", {"folder_id": team["uuid"], "scope": "shared", "path": "t.md", "content": "t"}
        )
        assert not shared.is_error and shared.structured_content["area"]["folder_id"] == "platform"
        assert not (await c.call_tool("delete_file_by_id", args)).is_error


async def test_a_uuid_with_the_other_scope_is_refused_not_switched(server_factory, directory, tmp_path):
    async with Client(_server(server_factory, directory, tmp_path)) as c:
        mine = await _folder(c, "my_private")
        r = await c.call_tool(
            "write_file_by_id", {"folder_id": mine["uuid"], "scope": "shared", "path": "x.md", "content": "x"}
        )
        assert r.is_error
        assert mine["uuid"] in r.content[0].text and "private" in r.content[0].text
    assert not (tmp_path / "data/organizations/acme/workspaces/ada/shared/x.md").exists()


async def test_a_uuid_of_another_organization_or_made_up_names_no_folder(server_factory, directory, tmp_path):
    async with Client(_server(server_factory, directory, tmp_path, agent="zed")) as zed:
        theirs = (await _folder(zed, "my_private"))["uuid"]
    async with Client(_server(server_factory, directory, tmp_path)) as c:
        for value in (theirs, str(uuid.uuid4())):
            r = await c.call_tool("read_file_by_id", {"folder_id": value, "scope": "private", "path": "a"})
            assert r.is_error and value in r.content[0].text and "list_folders" in r.content[0].text


async def test_bob_may_not_use_adas_private_uuid_any_more_than_her_id(server_factory, directory, tmp_path):
    async with Client(_server(server_factory, directory, tmp_path)) as ada:
        private = (await _folder(ada, "my_private"))["uuid"]
    async with Client(_server(server_factory, directory, tmp_path, agent="bob")) as bob:
        r = await bob.call_tool("read_file_by_id", {"folder_id": private, "scope": "private", "path": "a"})
        assert r.is_error and r.structured_content["error"]["code"] == "permission_denied"


async def test_folders_show_the_display_name_set_in_the_directory(server_factory, directory, tmp_path):
    DirectoryFile(directory).set_name("acme", "ada", "Ada's desk")
    DirectoryFile(directory).set_name("acme", "platform", "Platform team")
    async with Client(_server(server_factory, directory, tmp_path)) as c:
        mine = await _folder(c, "my_private")
        assert mine["display_name"] == "Ada's desk" and "Ada's desk" in mine["name"]
        team = await _folder(c, "team_private")
        assert team["display_name"] == "Platform team"
    assert "Ada's desk" in directory.read_text()


def test_a_display_name_must_name_a_folder_and_be_printable(directory):
    with pytest.raises(ConfigError, match="nobody"):
        DirectoryFile(directory).set_name("acme", "nobody", "X")
    with pytest.raises(ConfigError, match="control"):
        DirectoryFile(directory).set_name("acme", "ada", "bad\nname")
    text = '[organizations.acme]\nteams = []\n[organizations.acme.names]\nghost = "G"\n'
    with pytest.raises(ConfigError, match="ghost"):
        Directory.from_toml(text)


def test_homeport_directory_set_name_sets_and_clears_it(directory, tmp_path):
    runner = CliRunner()
    done = runner.invoke(cli, ["directory", "set-name", "acme", "ada", "Ada", "--directory", str(directory)])
    assert done.exit_code == 0, done.output
    assert DirectoryFile(directory).load().name_of("acme", "ada") == "Ada"
    done = runner.invoke(cli, ["directory", "set-name", "acme", "ada", "", "--directory", str(directory)])
    assert done.exit_code == 0, done.output
    assert DirectoryFile(directory).load().name_of("acme", "ada") is None
