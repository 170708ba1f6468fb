"""The tools through the SDK's in-memory Client, in both protocol eras."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from mcp import Client, types
from pydantic import FileUrl

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])


def roots_callback(paths: list[list[Path]], calls: list[int] | None = None):
    async def callback(_ctx) -> types.ListRootsResult:
        if calls is not None:
            calls.append(1)
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl(p.as_uri())) for p in paths[0]])

    return callback


@MODES
async def test_every_result_names_its_workspace_and_source(server_factory, projects, mode):
    async with Client(server_factory(), mode=mode) as c:
        r = await c.call_tool("log_decision", {"summary": "Use WAL", "workspace": str(projects["alpha"])})
        assert not r.is_error
        assert r.structured_content["workspace"] == {"root": str(projects["alpha"]), "source": "argument"}
        r = await c.call_tool("get_decisions", {"workspace": str(projects["alpha"])})
        assert [d["summary"] for d in r.structured_content["decisions"]] == ["Use WAL"]


@MODES
async def test_writes_land_only_in_their_own_workspace(server_factory, projects, mode):
    async with Client(server_factory(), mode=mode) as c:
        for name, path in projects.items():
            await c.call_tool(
                "log_custom_data", {"category": "who", "key": "me", "value": name, "workspace": str(path)}
            )
        for name, path in projects.items():
            r = await c.call_tool("get_custom_data", {"workspace": str(path)})
            assert [i["value"] for i in r.structured_content["items"]] == [name]


@MODES
async def test_no_workspace_is_an_error_that_lists_every_way(server_factory, mode):
    async with Client(server_factory(), mode=mode) as c:
        r = await c.call_tool("get_decisions", {})
        assert r.is_error
        text = r.content[0].text
        assert "no workspace" in text and "--workspace" in text and "X-Workspace-Id" in text
        assert "workspace_unresolved" in text


@MODES
async def test_bad_workspace_argument_names_the_value(server_factory, mode, tmp_path):
    async with Client(server_factory(), mode=mode) as c:
        r = await c.call_tool("log_decision", {"summary": "x", "workspace": "vscode-remote://ssh/x"})
        assert r.is_error and "vscode-remote" in r.content[0].text
        r = await c.call_tool("log_decision", {"summary": "x", "workspace": str(tmp_path / "missing")})
        assert r.is_error and str(tmp_path / "missing") in r.content[0].text


@MODES
async def test_one_client_root_is_the_workspace(server_factory, projects, mode):
    cb = roots_callback([[projects["beta"]]])
    async with Client(server_factory(), mode=mode, list_roots_callback=cb) as c:
        r = await c.call_tool("log_progress", {"status": "TODO", "description": "from roots"})
        assert r.structured_content["workspace"] == {"root": str(projects["beta"]), "source": "roots"}


@MODES
async def test_an_argument_outside_the_declared_roots_is_refused(server_factory, projects, mode):
    cb = roots_callback([[projects["beta"]]])
    async with Client(server_factory(), mode=mode, list_roots_callback=cb) as c:
        r = await c.call_tool("log_decision", {"summary": "x", "workspace": str(projects["alpha"])})
        assert r.is_error and r.structured_content["error"]["code"] == "workspace_denied"
        assert str(projects["alpha"]) in r.content[0].text and str(projects["beta"]) in r.content[0].text
        r = await c.call_tool("log_decision", {"summary": "x", "workspace": str(projects["beta"])})
        assert r.structured_content["workspace"] == {"root": str(projects["beta"]), "source": "argument"}
    assert not (projects["alpha"] / ".homeport").exists()


async def test_a_legacy_session_asks_for_roots_once_even_when_every_call_names_its_workspace(server_factory, projects):
    calls: list[int] = []
    cb = roots_callback([[projects["alpha"]]], calls)
    async with Client(server_factory(), mode="legacy", list_roots_callback=cb) as c:
        for _ in range(3):
            r = await c.call_tool("get_decisions", {"workspace": str(projects["alpha"])})
            assert r.structured_content["workspace"]["source"] == "argument"
    assert len(calls) == 1


@MODES
async def test_the_configured_workspace_must_lie_inside_the_declared_roots(server_factory, projects, mode):
    cb = roots_callback([[projects["beta"]]])
    async with Client(server_factory(workspace=str(projects["alpha"])), mode=mode, list_roots_callback=cb) as c:
        r = await c.call_tool("get_progress", {})
        assert r.is_error and r.structured_content["error"]["code"] == "workspace_denied"
    cb = roots_callback([[projects["alpha"]]])
    async with Client(server_factory(workspace=str(projects["alpha"])), mode=mode, list_roots_callback=cb) as c:
        r = await c.call_tool("get_progress", {})
        assert r.structured_content["workspace"] == {"root": str(projects["alpha"]), "source": "config"}


async def test_legacy_session_caches_roots_until_they_change(server_factory, projects):
    current = [[projects["alpha"]]]
    calls: list[int] = []
    async with Client(server_factory(), mode="legacy", list_roots_callback=roots_callback(current, calls)) as c:
        for _ in range(3):
            r = await c.call_tool("get_decisions", {})
            assert r.structured_content["workspace"]["root"] == str(projects["alpha"])
        assert len(calls) == 1
        current[0] = [projects["beta"]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await c.send_roots_list_changed()
        # The notification is handled concurrently with the next call; wait until it took effect.
        for _ in range(200):
            r = await c.call_tool("get_decisions", {})
            if r.structured_content["workspace"]["root"] == str(projects["beta"]):
                break
        assert r.structured_content["workspace"]["root"] == str(projects["beta"])


async def test_modern_era_fetches_roots_on_every_call_that_needs_them(server_factory, projects):
    current = [[projects["alpha"]]]
    async with Client(server_factory(), mode="auto", list_roots_callback=roots_callback(current)) as c:
        r = await c.call_tool("get_decisions", {})
        assert r.structured_content["workspace"]["root"] == str(projects["alpha"])
        current[0] = [projects["beta"]]
        r = await c.call_tool("get_decisions", {})
        assert r.structured_content["workspace"]["root"] == str(projects["beta"])


async def test_two_roots_without_cwd_inside_are_ambiguous(server_factory, projects):
    cb = roots_callback([[projects["alpha"], projects["beta"]]])
    async with Client(server_factory(), mode="legacy", list_roots_callback=cb) as c:
        r = await c.call_tool("get_decisions", {})
        assert r.is_error and str(projects["alpha"]) in r.content[0].text and str(projects["beta"]) in r.content[0].text


async def test_use_workspace_sets_the_session_default_on_legacy_sessions(server_factory, projects):
    async with Client(server_factory(), mode="legacy") as c:
        r = await c.call_tool("use_workspace", {"workspace": str(projects["beta"])})
        assert r.structured_content["bound_to_session"] is True
        assert r.structured_content["handle"].startswith("ws_")
        r = await c.call_tool("log_decision", {"summary": "session"})
        assert r.structured_content["workspace"] == {"root": str(projects["beta"]), "source": "session"}


async def test_use_workspace_on_the_modern_era_returns_a_handle_and_binds_nothing(server_factory, projects):
    async with Client(server_factory(), mode="auto") as c:
        r = await c.call_tool("use_workspace", {"workspace": str(projects["beta"])})
        handle = r.structured_content["handle"]
        assert r.structured_content["bound_to_session"] is False
        assert (await c.call_tool("get_decisions", {})).is_error
        r = await c.call_tool("log_decision", {"summary": "by handle", "workspace": handle})
        assert r.structured_content["workspace"] == {"root": str(projects["beta"]), "source": "argument"}


async def test_session_defaults_do_not_leak_between_connections(server_factory, projects):
    server = server_factory()
    async with Client(server, mode="legacy") as first:
        await first.call_tool("use_workspace", {"workspace": str(projects["alpha"])})
        async with Client(server, mode="legacy") as second:
            assert (await second.call_tool("get_decisions", {})).is_error


@MODES
async def test_where_am_i_reports_source_store_and_what_each_source_saw(server_factory, projects, mode):
    async with Client(server_factory(), mode=mode) as c:
        r = await c.call_tool("where_am_i", {"workspace": str(projects["alpha"] / ".git" / "..")})
        out = r.structured_content
        assert out["root"] == str(projects["alpha"]) and out["source"] == "argument"
        assert out["store"] == str(projects["alpha"] / ".homeport" / "homeport.db") and out["store_exists"] is False
        assert [s["source"] for s in out["sources"]] == [
            "argument",
            "header",
            "query",
            "session",
            "config",
            "roots",
            "client_env",
            "cwd",
        ]
        assert out["protocol_version"] == ("2026-07-28" if mode == "auto" else "2025-11-25")


@MODES
async def test_where_am_i_explains_instead_of_failing(server_factory, mode):
    async with Client(server_factory(), mode=mode) as c:
        r = await c.call_tool("where_am_i", {})
        assert not r.is_error
        assert r.structured_content["workspace"] is None and "no workspace" in r.structured_content["error"]


@MODES
async def test_reads_do_not_create_a_store(server_factory, projects, mode):
    async with Client(server_factory(), mode=mode) as c:
        for tool in ("get_decisions", "get_progress", "get_custom_data", "get_active_context", "get_product_context"):
            r = await c.call_tool(tool, {"workspace": str(projects["alpha"])})
            assert not r.is_error
        r = await c.call_tool("search", {"query": "x", "mode": "words", "workspace": str(projects["alpha"])})
        assert r.structured_content["results"] == []
    assert not (projects["alpha"] / ".homeport").exists()


@MODES
async def test_context_tools_patch_and_delete_keys(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        await c.call_tool("update_active_context", {"content": {"focus": "resolver", "open": [1]}, "workspace": ws})
        r = await c.call_tool(
            "update_active_context", {"patch": {"focus": "__DELETE__", "next": "http"}, "workspace": ws}
        )
        assert r.structured_content["content"] == {"open": [1], "next": "http"}
        assert r.structured_content["version"] == 2
        r = await c.call_tool("update_product_context", {"workspace": ws})
        assert r.is_error and "exactly one" in r.content[0].text


@MODES
async def test_progress_and_search_round_trip(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        parent = (
            await c.call_tool("log_progress", {"status": "TODO", "description": "ship resolver", "workspace": ws})
        ).structured_content
        child = (
            await c.call_tool(
                "log_progress",
                {"status": "TODO", "description": "write guards", "parent_id": parent["id"], "workspace": ws},
            )
        ).structured_content
        r = await c.call_tool("update_progress", {"progress_id": child["id"], "status": "DONE", "workspace": ws})
        assert r.structured_content["status"] == "DONE"
        r = await c.call_tool("get_progress", {"parent_id": parent["id"], "workspace": ws})
        assert [p["id"] for p in r.structured_content["progress"]] == [child["id"]]
        r = await c.call_tool("search", {"query": "guards", "mode": "words", "workspace": ws})
        assert r.structured_content["results"][0] | {"score": 0, "updated_at": 0} == {
            "type": "progress",
            "id": child["id"],
            "title": "write guards",
            "snippet": "write guards",
            "matches": [[6, 12]],
            "score": 0,
            "updated_at": 0,
        }
        r = await c.call_tool("update_progress", {"progress_id": 999, "status": "DONE", "workspace": ws})
        assert r.is_error and "999" in r.content[0].text


async def test_require_explicit_workspace_refuses_writes_from_roots(server_factory, projects):
    cb = roots_callback([[projects["alpha"]]])
    async with Client(server_factory(require_explicit_workspace=True), mode="legacy", list_roots_callback=cb) as c:
        assert not (await c.call_tool("get_decisions", {})).is_error
        r = await c.call_tool("log_decision", {"summary": "x"})
        assert r.is_error and "explicit workspace" in r.content[0].text
        r = await c.call_tool("log_decision", {"summary": "x", "workspace": str(projects["alpha"])})
        assert not r.is_error


async def test_a_session_whose_client_fails_to_list_roots_is_told_how_to_name_the_workspace(server_factory):
    async def failing(_ctx):
        return types.ErrorData(code=-32603, message="roots are unavailable right now")

    async with Client(server_factory(), mode="legacy", list_roots_callback=failing) as c:
        r = await c.call_tool("get_decisions", {})
    assert r.is_error
    text = r.content[0].text
    assert "no workspace for this call" in text and "the client failed roots/list (roots are unavailable" in text
