"""File tools in process: the agent comes from --agent on stdio, never from an argument."""

from __future__ import annotations

import pytest
from mcp import Client

from homeport.files.directory import DirectoryFile

pytestmark = pytest.mark.anyio


@pytest.fixture
def directory(tmp_path):
    d = DirectoryFile(tmp_path / "data" / "directory.toml")
    d.add_organization("acme")
    d.add_team("acme", "platform")
    d.add_agent("acme", "ada", "platform")
    d.add_agent("acme", "bob", "platform")
    return d.path


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_agent_writes_its_folder_and_the_result_names_the_location(
    server_factory, directory, tmp_path, mode
):
    server = server_factory(agent="ada", data_dir=tmp_path / "data", directory_file=directory)
    async with Client(server, mode=mode) as c:
        r = await c.call_tool(
            "write_file_by_id", {"folder_id": "ada", "scope": "private", "path": "a/b.md", "content": "hello"}
        )
        assert not r.is_error, r.content[0].text
        root = r.structured_content["area"]["root"]
        assert root == str(tmp_path / "data" / "organizations" / "acme" / "workspaces" / "ada" / "private")
        assert (
            tmp_path / "data" / "organizations" / "acme" / "workspaces" / "ada" / "private" / "a" / "b.md"
        ).read_text() == "hello"
        r = await c.call_tool("list_files", {"folder_id": "ada", "scope": "private", "recursive": True})
        assert [e["path"] for e in r.structured_content["entries"]] == ["a", "a/b.md"]
        info = await c.call_tool("get_file_info_by_id", {"folder_id": "ada", "scope": "private", "path": "a/b.md"})
        assert info.structured_content["size"] == 5


async def test_file_tools_without_an_agent_explain_how_to_name_one(server_factory, directory, tmp_path):
    async with Client(server_factory(data_dir=tmp_path / "data", directory_file=directory)) as c:
        r = await c.call_tool("list_folders", {"scope": "my_private"})
        assert r.is_error and "--agent" in r.content[0].text and "tokens add" in r.content[0].text


async def test_an_agent_missing_from_the_directory_is_told_how_to_add_it(server_factory, directory, tmp_path):
    async with Client(server_factory(agent="ghost", data_dir=tmp_path / "data", directory_file=directory)) as c:
        r = await c.call_tool("list_folders", {"scope": "my_private"})
        assert r.is_error and "ghost" in r.content[0].text and "directory add-agent" in r.content[0].text


async def test_directory_edits_are_seen_without_a_restart(server_factory, directory, tmp_path):
    async with Client(server_factory(agent="cy", data_dir=tmp_path / "data", directory_file=directory)) as c:
        assert (await c.call_tool("list_folders", {"scope": "my_private"})).is_error
        DirectoryFile(directory).add_agent("acme", "cy")
        r = await c.call_tool("list_folders", {"scope": "my_private"})
        assert not r.is_error and r.structured_content["folders"][0]["folder_id"] == "cy"
