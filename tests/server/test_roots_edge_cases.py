"""Roots as real clients send them: none listed, never answered, failing, and what where_am_i says."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, types
from pydantic import FileUrl

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])


def listing(*paths: Path):
    async def callback(_ctx) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl(p.as_uri())) for p in paths])

    return callback


@MODES
async def test_a_client_that_declares_roots_and_lists_none_is_treated_as_having_none(server_factory, projects, mode):
    # MCP Inspector 2.12 does this: the cwd and CLAUDE_PROJECT_DIR must still work, and where_am_i says why.
    server = server_factory(cwd=projects["alpha"])
    async with Client(server, mode=mode, list_roots_callback=listing()) as c:
        r = await c.call_tool("log_decision", {"summary": "from the cwd"})
        assert r.structured_content["workspace"] == {"root": str(projects["alpha"]), "source": "cwd"}
        report = (await c.call_tool("where_am_i", {})).structured_content
    assert report["declared_roots"] is None
    assert report["roots_note"] == "declared, but the client listed no roots"


async def test_a_client_that_never_answers_roots_list_is_served_after_the_timeout_and_then_without_waiting(
    server_factory, projects
):
    calls: list[int] = []

    async def never(_ctx) -> types.ListRootsResult:
        calls.append(1)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    server = server_factory(cwd=projects["alpha"], roots_timeout_seconds=0.5)
    async with Client(server, mode="legacy", list_roots_callback=never) as c:
        started = time.monotonic()
        r = await c.call_tool("get_decisions", {})
        assert r.structured_content["workspace"]["source"] == "cwd"
        assert 0.4 < time.monotonic() - started < 5
        started = time.monotonic()
        for _ in range(3):
            await c.call_tool("get_decisions", {"workspace": str(projects["beta"])})
        assert time.monotonic() - started < 1.5  # remembered for the connection: nobody waits again
        report = (await c.call_tool("where_am_i", {})).structured_content
    assert calls == [1]
    assert "did not answer roots/list within 0.5 s" in report["roots_note"]


@MODES
async def test_roots_of_which_none_is_local_admit_no_workspace(server_factory, projects, mode):
    async def remote(_ctx) -> types.ListRootsResult:
        # A folder of another machine (a remote window): a file:// URI that is no directory here.
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl("file:///remote-box/home/ana/app"))])

    async with Client(server_factory(cwd=projects["alpha"]), mode=mode, list_roots_callback=remote) as c:
        r = await c.call_tool("log_decision", {"summary": "x", "workspace": str(projects["alpha"])})
    assert r.is_error and r.structured_content["error"]["code"] == "workspace_denied"
    assert "none of them is a directory on this machine" in r.content[0].text
    assert not (projects["alpha"] / ".homeport").exists()


async def test_a_2026_client_pays_no_round_trip_for_calls_that_pass_a_handle_bound_to_its_roots(
    server_factory, projects
):
    asked: list[int] = []

    async def counting(_ctx) -> types.ListRootsResult:
        asked.append(1)
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl(projects["alpha"].as_uri()))])

    async with Client(server_factory(), mode="auto", list_roots_callback=counting) as c:
        handle = (await c.call_tool("use_workspace", {"workspace": str(projects["alpha"])})).structured_content[
            "handle"
        ]
        assert len(asked) == 1
        for _ in range(5):
            r = await c.call_tool("log_decision", {"summary": "x", "workspace": handle})
            assert r.structured_content["workspace"] == {"root": str(projects["alpha"]), "source": "argument"}
        assert len(asked) == 1
        await c.call_tool("log_decision", {"summary": "x", "workspace": str(projects["alpha"])})
        assert len(asked) == 2  # a raw path costs the round trip


async def test_where_am_i_over_http_shows_no_server_directory_or_environment(runtime_factory, projects):
    from homeport.server import build_server

    runtime = runtime_factory(
        transport="http", allow_roots=(projects["alpha"].parent,), client_env={"CLAUDE_PROJECT_DIR": "/secret"}
    )
    async with Client(build_server(runtime)) as c:
        report = (await c.call_tool("where_am_i", {"workspace": str(projects["alpha"])})).structured_content
    sources = {s["source"] for s in report["sources"]}
    assert "cwd" not in sources and "client_env" not in sources
    assert "/secret" not in str(report)
