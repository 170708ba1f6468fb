"""What a git sync settled is reported where people look: the sync tool's result, where_am_i, the dashboard."""

from __future__ import annotations

import html
import subprocess
import time
from pathlib import Path

import pytest
from mcp import Client

from homeport.server.app import build_server
from homeport.store import Store, decisions
from homeport.sync import sync_memory

pytestmark = pytest.mark.anyio


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


async def test_a_settled_conflict_is_reported_by_where_am_i_and_shown_on_the_dashboard(
    tmp_path: Path, make_app, client_for
):
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q", "--bare", "remote.git")
    git(src, "clone", "-q", str(src / "remote.git"), "app")
    git(src, "clone", "-q", str(src / "remote.git"), "other")
    app, runtime = make_app()
    mine = runtime.stores.get(src / "app", create=True)
    theirs = Store.open(src / "other", create=True)
    assert mine is not None and theirs is not None
    ws = str(src / "app")
    async with Client(build_server(runtime)) as mcp:
        d = decisions.log_decision(mine, "retry payments twice")
        first = (await mcp.call_tool("sync", {"workspace": ws})).structured_content
        assert first["pushed"] and first["exported"] == 1
        sync_memory(theirs, src / "other")
        decisions.update_decision(mine, d["id"], summary="retry payments three times")
        # An edit's clock is its millisecond; in the same one the random replica id would decide the winner.
        start = time.time_ns() // 1_000_000
        while time.time_ns() // 1_000_000 <= start + 1:
            pass
        decisions.update_decision(theirs, decisions.get_decisions(theirs)[0]["id"], summary="never retry payments")
        sync_memory(theirs, src / "other")  # the later edit, pushed first
        result = (await mcp.call_tool("sync", {"workspace": ws})).structured_content
        assert [(c["item_id"], c["field"]) for c in result["conflicts"]] == [(d["id"], "summary")]
        where = (await mcp.call_tool("where_am_i", {"workspace": ws})).structured_content
        assert where["sync_conflicts"] == 1 and "homeport sync --conflicts" in where["sync_conflicts_note"]
    theirs.close()

    page = html.unescape((await client_for(app).get("/ui/w", params={"ws": ws})).text)
    assert "Settled by git sync" in page and "1 concurrent edit(s) to look at" in page
    assert f"decision {d['id']}" in page and '"retry payments three times"' in page
