"""A team server for logical workspaces, and projects that send their memory there (real processes:
`homeport serve --http --logical-workspaces --auth` and stdio front ends in git clones with [team] url)."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import clean_env, error_text, free_port, http_client, ok, refused_with_403, stdio_client
from ._team import KEY, Team, team_clone, team_server, trust

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    with team_server(tmp_path_factory.mktemp("team")) as running:
        yield running


def clone(path: Path, origin: str, team_url: str, home: Path) -> Path:
    """A team clone (`team_clone`) with a local database of its own, trusted by the user of `home` with the
    token from HOMEPORT_TEAM_TOKEN (until then nothing of it goes to the team server: test_team_trust.py)."""
    root = team_clone(path, team_url, origin)
    with sqlite3.connect(root / "db.sqlite3") as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    trust(root, user_env(home), "--token-env", "HOMEPORT_TEAM_TOKEN")
    return root


def user_env(tmp: Path, **extra: str) -> dict[str, str]:
    return clean_env(
        HOME=str(tmp), XDG_CONFIG_HOME=str(tmp / ".config"), HOMEPORT_STATE_DIR=str(tmp / "state"), **extra
    )


def front_end(root: Path, tmp: Path, token: str | None):
    extra = {"HOMEPORT_TEAM_TOKEN": token} if token is not None else {}
    return stdio_client(cwd=root, mode="auto", env=user_env(tmp, **extra))


async def test_clones_share_one_memory_on_the_team_server_and_keep_their_database_local(team, tmp_path) -> None:
    laptop = clone(tmp_path / "laptop" / "api", "git@github.com:acme/api.git", team.url, tmp_path)
    desktop = clone(tmp_path / "desktop" / "api-copy", "https://github.com/acme/api.git", team.url, tmp_path)
    async with front_end(laptop, tmp_path, team.token) as client:
        written = ok(await client.call_tool("log_decision", {"summary": "use Postgres in production"}))
        # The team server's own answer: it served the key it was sent in X-Workspace-Id.
        assert written["workspace"] == {"key": KEY, "source": "header"}
        tables = ok(await client.call_tool("get_tables", {}))
        assert "orders" in str(tables) and tables["workspace"]["root"] == str(laptop)
        where = ok(await client.call_tool("where_am_i", {}))
        assert (where["project_key"], where["project_key_source"]) == (KEY, "git_remote")
        assert where["team"] == {"url": team.url, "project_key": KEY, "token": "$HOMEPORT_TEAM_TOKEN"}
        assert where["trust"] == {"status": "trusted"}
    async with front_end(desktop, tmp_path, team.token) as client:
        read = ok(await client.call_tool("get_decisions", {}))
        assert [d["summary"] for d in read["decisions"]] == ["use Postgres in production"]
    # No clone kept a memory of its own; the team server keeps the key's under its data directory.
    assert not (laptop / ".homeport" / "homeport.db").exists()
    assert not (desktop / ".homeport" / "homeport.db").exists()
    stores = list((team.data / "logical-workspaces").glob("*/.homeport/homeport.db"))
    assert [p.parent.parent.name.rpartition(".")[0] for p in stores] == ["github.com~acme~api"]


async def test_the_team_server_refuses_paths_and_tools_that_need_a_directory(team) -> None:
    auth = {"Authorization": f"Bearer {team.token}"}
    async with http_client(team.url + "/mcp", mode="auto", headers={**auth, "X-Workspace-Id": "/srv/acme/api"}) as c:
        refused = await c.call_tool("get_decisions", {})
        assert refused.is_error and refused.structured_content["error"]["code"] == "invalid_workspace"
        assert "logical workspaces" in error_text(refused) and "/srv/acme/api" in error_text(refused)
    async with http_client(team.url + "/mcp", mode="auto", headers={**auth, "X-Workspace-Id": KEY}) as c:
        refused = await c.call_tool("get_tables", {})
        assert refused.structured_content["error"]["code"] == "logical_workspace"
        assert "not available for logical workspaces" in error_text(refused)
        bad = await c.call_tool("get_decisions", {"workspace": "acme/../etc"})
        assert bad.structured_content["error"]["code"] == "invalid_workspace" and "'..'" in error_text(bad)
        outside = await c.call_tool("get_decisions", {"workspace": "github.com/other/app"})
        assert outside.structured_content["error"]["code"] == "workspace_access_denied"
    async with http_client(f"{team.url}/mcp?project_path={KEY}", mode="auto", headers=auth) as c:
        by_query = ok(await c.call_tool("get_decisions", {}))
        assert by_query["workspace"] == {"key": KEY, "source": "query"}
    other = (team.tmp / "other-token").read_text(encoding="utf-8")
    # A key the principal may not use: a 403 when the request chooses it, a tool error when a call names it.
    chosen = refused_with_403(team.url + "/mcp", {"Authorization": f"Bearer {other}", "X-Workspace-Id": KEY})
    assert chosen["data"]["workspace"] == KEY
    async with http_client(team.url + "/mcp", mode="auto", headers={"Authorization": f"Bearer {other}"}) as c:
        denied = await c.call_tool("get_decisions", {"workspace": KEY})
        assert denied.structured_content["error"]["code"] == "workspace_access_denied"


async def test_an_unreachable_team_server_fails_the_call_naming_it_and_writes_nothing_here(tmp_path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    root = clone(tmp_path / "api", "git@github.com:acme/api.git", url, tmp_path)
    async with front_end(root, tmp_path, "hp_whatever") as client:
        failed = await client.call_tool("log_decision", {"summary": "lost?"})
        assert failed.is_error and failed.structured_content["error"]["code"] == "team_server_unavailable"
        assert url in error_text(failed) and "not served from a local store" in error_text(failed)
        # The project database needs no team server.
        ok(await client.call_tool("get_tables", {}))
    assert not (root / ".homeport" / "homeport.db").exists()


async def test_a_missing_token_is_named_before_anything_is_sent_and_a_wrong_one_is_refused(team, tmp_path) -> None:
    root = clone(tmp_path / "api", "git@github.com:acme/api.git", team.url, tmp_path)
    async with front_end(root, tmp_path, None) as client:
        failed = await client.call_tool("get_decisions", {})
        assert failed.structured_content["error"]["code"] == "config_error"
        assert "HOMEPORT_TEAM_TOKEN" in error_text(failed)
    async with front_end(root, tmp_path, "hp_not_a_token") as client:
        refused = await client.call_tool("log_decision", {"summary": "x"})
        assert refused.structured_content["error"]["code"] == "team_server_unavailable"
        assert team.url in error_text(refused) and "hp_not_a_token" not in error_text(refused)
        assert "HTTP 401" in error_text(refused) and "token was refused" in error_text(refused)
    assert not (root / ".homeport" / "homeport.db").exists()
