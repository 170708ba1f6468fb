"""File areas over real HTTP with bearer tokens: each agent sees and changes exactly what the table allows."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from homeport.files.directory import DirectoryFile
from homeport.files.tokens import TokenStore

from ._support import HttpServer, _stop, _wait_healthy, clean_env, error_text, free_port, http_client, ok, serve_args

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
AGENTS = ("ada", "bob", "carl", "lee", "zed")


@contextlib.contextmanager
def auth_server(tmp: Path) -> Iterator[tuple[HttpServer, dict[str, str]]]:
    data = tmp / "data"
    directory = DirectoryFile(data / "directory.toml")
    directory.add_organization("acme")
    directory.add_team("acme", "platform")
    directory.add_team("acme", "data")
    directory.add_agent("acme", "ada", "platform")
    directory.add_agent("acme", "bob", "platform")
    directory.add_agent("acme", "carl", "data")
    directory.add_agent("acme", "lee")
    directory.set_leadership("acme", ["lee"])
    directory.add_workspace_root("acme", str(tmp / "acme"))
    directory.add_organization("other")
    directory.add_agent("other", "zed")
    store = TokenStore(data / "tokens.json")
    tokens = {agent: store.add(agent) for agent in AGENTS}
    port = free_port()
    log = tmp / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                *serve_args("--http", "--port", str(port), "--allow-root", str(tmp), "--auth", "--data-dir", str(data)),
            ],
            cwd=tmp,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    server = HttpServer(process=process, port=port, allow_root=tmp, cwd=tmp, log=log)
    try:
        _wait_healthy(server)
        yield server, tokens
    finally:
        _stop(process)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with auth_server(tmp_path_factory.mktemp("areas")) as pair:
        yield pair


def as_agent(served, agent: str, mode: str = "auto"):
    server, tokens = served
    return http_client(server.mcp_url, mode=mode, headers={"Authorization": f"Bearer {tokens[agent]}"})


async def call(served, agent: str, tool: str, **args):
    async with as_agent(served, agent) as c:
        return await c.call_tool(tool, args)


async def test_requests_without_a_valid_token_get_401(served):
    server, _ = served
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=60) as http:
        assert (await http.post(server.mcp_url, json=body, headers=headers)).status_code == 401
        bad = {**headers, "Authorization": "Bearer hp_not-a-token"}
        assert (await http.post(server.mcp_url, json=body, headers=bad)).status_code == 401


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_owner_writes_reads_and_deletes_own_areas(served, mode):
    async with as_agent(served, "ada", mode) as c:
        for scope in ("private", "shared"):
            written = ok(
                await c.call_tool(
                    "write_file_by_id",
                    {"folder_id": "ada", "scope": scope, "path": f"notes/{mode}.md", "content": f"{scope} hi"},
                )
            )
            assert written["area"] == {
                "org": "acme",
                "folder_id": "ada",
                "scope": scope,
                "root": written["area"]["root"],
            }
            read = ok(
                await c.call_tool("read_file_by_id", {"folder_id": "ada", "scope": scope, "path": f"notes/{mode}.md"})
            )
            assert read["content"] == f"{scope} hi"
        ok(await c.call_tool("delete_file_by_id", {"folder_id": "ada", "scope": "private", "path": f"notes/{mode}.md"}))


async def test_agent_shared_folder_is_readable_by_teammates_and_leadership_only(served):
    ok(await call(served, "ada", "write_file_by_id", folder_id="ada", scope="shared", path="plan.md", content="p"))
    ok(await call(served, "ada", "write_file_by_id", folder_id="ada", scope="private", path="diary.md", content="d"))
    for reader in ("bob", "lee"):
        assert (
            ok(await call(served, reader, "read_file_by_id", folder_id="ada", scope="shared", path="plan.md"))[
                "content"
            ]
            == "p"
        )
    text = error_text(await call(served, "carl", "read_file_by_id", folder_id="ada", scope="shared", path="plan.md"))
    assert "permission_denied" in text and "carl" in text
    for reader in ("bob", "lee", "carl"):
        text = error_text(
            await call(served, reader, "read_file_by_id", folder_id="ada", scope="private", path="diary.md")
        )
        assert "private" in text and "permission_denied" in text
    for writer in ("bob", "lee"):
        text = error_text(
            await call(
                served,
                writer,
                "write_file_by_id",
                folder_id="ada",
                scope="shared",
                path="plan.md",
                content="overwritten",
            )
        )
        assert "permission_denied" in text
    assert (
        ok(await call(served, "ada", "read_file_by_id", folder_id="ada", scope="shared", path="plan.md"))["content"]
        == "p"
    )


async def test_team_folders_are_shared_by_members_and_shared_areas_readable_by_the_org(served):
    ok(
        await call(
            served, "ada", "write_file_by_id", folder_id="platform", scope="private", path="secrets.md", content="s"
        )
    )
    ok(
        await call(
            served, "bob", "write_file_by_id", folder_id="platform", scope="shared", path="runbook.md", content="r"
        )
    )
    assert (
        ok(await call(served, "ada", "read_file_by_id", folder_id="platform", scope="shared", path="runbook.md"))[
            "content"
        ]
        == "r"
    )
    ok(await call(served, "bob", "delete_file_by_id", folder_id="platform", scope="private", path="secrets.md"))
    for reader in ("carl", "lee"):
        assert (
            ok(await call(served, reader, "read_file_by_id", folder_id="platform", scope="shared", path="runbook.md"))[
                "content"
            ]
            == "r"
        )
        error_text(
            await call(
                served, reader, "write_file_by_id", folder_id="platform", scope="shared", path="runbook.md", content="x"
            )
        )
    ok(
        await call(
            served, "ada", "write_file_by_id", folder_id="platform", scope="private", path="again.md", content="s"
        )
    )
    for outsider in ("carl", "lee"):
        error_text(
            await call(served, outsider, "read_file_by_id", folder_id="platform", scope="private", path="again.md")
        )


async def test_nobody_creates_another_teams_or_agents_folders(served):
    text = error_text(
        await call(served, "carl", "write_file_by_id", folder_id="platform", scope="shared", path="x.md", content="x")
    )
    assert "permission_denied" in text
    text = error_text(
        await call(served, "ada", "write_file_by_id", folder_id="carl", scope="private", path="x.md", content="x")
    )
    assert "permission_denied" in text


async def test_another_organization_sees_nothing(served):
    text = error_text(await call(served, "zed", "read_file_by_id", folder_id="ada", scope="shared", path="plan.md"))
    assert "ada" in text
    folders = ok(await call(served, "zed", "list_folders", scope="org_shared"))["folders"]
    assert [f["folder_id"] for f in folders] == ["zed"]
    assert all(f["path"].startswith("organizations/other/") for f in folders)


async def test_list_folders_shows_what_each_agent_may_read(served):
    carl = {
        (f["folder_id"], f["scope"])
        for f in ok(await call(served, "carl", "list_folders", scope="org_shared"))["folders"]
    }
    assert ("platform", "shared") in carl and ("ada", "shared") not in carl
    lee = {
        (f["folder_id"], f["scope"])
        for f in ok(await call(served, "lee", "list_folders", scope="org_shared"))["folders"]
    }
    assert ("ada", "shared") in lee and ("platform", "shared") in lee
    mine = ok(await call(served, "bob", "list_folders", scope="team_private"))["folders"]
    assert [(f["folder_id"], f["scope"]) for f in mine] == [("platform", "private")]


async def test_path_traversal_is_refused_over_the_wire(served):
    for path in ("../bob/private/x", "/etc/passwd", "a/../../x", "x\x00y"):
        text = error_text(
            await call(served, "ada", "write_file_by_id", folder_id="ada", scope="private", path=path, content="x")
        )
        assert "file_area_error" in text or "Error" in text


async def test_memory_tools_still_route_by_workspace_under_auth(served, tmp_path):
    server, _ = served
    project = server.allow_root / "acme" / "proj"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    r = await call(served, "ada", "log_decision", summary="authed", workspace=str(project))
    assert ok(r)["workspace"]["source"] == "argument"


async def test_an_agent_may_not_use_a_workspace_outside_its_orgs_roots(served):
    server, _ = served
    outside = server.allow_root / "elsewhere"
    (outside / ".git").mkdir(parents=True, exist_ok=True)
    text = error_text(await call(served, "ada", "log_decision", summary="no", workspace=str(outside)))
    assert "workspace_access_denied" in text
    # Another organization without roots gets no workspace, not even acme's.
    project = server.allow_root / "acme" / "proj"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    text = error_text(await call(served, "zed", "get_decisions", workspace=str(project)))
    assert "workspace_access_denied" in text and "add-workspace-root other DIR" in text
    assert not (outside / ".homeport").exists()


async def test_a_token_file_broken_while_serving_answers_401_not_500(tmp_path):
    with auth_server(tmp_path) as (server, tokens):
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "Authorization": f"Bearer {tokens['ada']}",
        }
        (tmp_path / "data" / "tokens.json").write_bytes(b"[" * 100_000)
        async with httpx2.AsyncClient(timeout=60) as http:
            assert (await http.post(server.mcp_url, json=body, headers=headers)).status_code == 401
        assert "Traceback" not in server.log_text()
        assert "malformed" in server.log_text()
