"""The beads flow over MCP, both eras: create, block, ready, close; and search across several workspaces,
each checked exactly as the `workspace` argument is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from test_tools_inmemory import roots_callback

from homeport.core import tools as _tools  # noqa: F401  (declares every tool)
from homeport.core.catalog import CATALOG
from homeport.core.pipeline import CallPipeline, LocalRequest
from homeport.errors import WorkspaceError

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])


async def _ok(c: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    r = await c.call_tool(tool, arguments)
    assert not r.is_error, (tool, r.content)
    assert isinstance(r.structured_content, dict)
    return r.structured_content


async def _error(c: Client, tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
    r = await c.call_tool(tool, arguments)
    assert r.is_error, (tool, r.structured_content)
    return r.structured_content["error"]["code"], r.content[0].text


@MODES
async def test_create_block_ready_close_works_through_mcp(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        schema = (await _ok(c, "log_progress", {"status": "TODO", "description": "schema", "workspace": ws}))["id"]
        api = (await _ok(c, "log_progress", {"status": "TODO", "description": "api", "workspace": ws}))["id"]
        link = await _ok(
            c,
            "link_items",
            {
                "source_type": "progress",
                "source_id": api,
                "target_type": "progress",
                "target_id": schema,
                "relationship": "blocked_by",
                "workspace": ws,
            },
        )
        assert (link["source_id"], link["relationship"], link["target_id"]) == (schema, "blocks", api)
        ready = await _ok(c, "get_ready_work", {"workspace": ws})
        assert [(i["id"], i["ready_because"]) for i in ready["items"]] == [(schema, "no blockers")]
        assert ready["blocked"] == [{"id": api, "blocked_by": [{"id": schema, "status": "TODO"}]}]
        assert ready["workspace"]["root"] == ws
        view = await _ok(
            c,
            "get_linked_items",
            {"item_type": "progress", "item_id": api, "relationship": "blocked_by", "workspace": ws},
        )
        assert [i["id"] for i in view["items"]] == [schema]
        await _ok(c, "update_progress", {"progress_id": schema, "status": "DONE", "workspace": ws})
        ready = await _ok(c, "get_ready_work", {"workspace": ws})
        assert [i["id"] for i in ready["items"]] == [api]
        assert ready["items"][0]["ready_because"] == f"every blocker is done: progress {schema} (DONE)"


@MODES
async def test_a_blocks_link_closing_a_cycle_is_refused_with_the_cycle_named(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        a = (await _ok(c, "log_progress", {"status": "TODO", "description": "a", "workspace": ws}))["id"]
        b = (await _ok(c, "log_progress", {"status": "TODO", "description": "b", "workspace": ws}))["id"]
        edge = {"source_type": "progress", "target_type": "progress", "relationship": "blocks", "workspace": ws}
        await _ok(c, "link_items", {**edge, "source_id": a, "target_id": b})
        code, text = await _error(c, "link_items", {**edge, "source_id": b, "target_id": a})
        assert code == "invalid_item"
        assert f"progress {b} blocks progress {a} blocks progress {b}" in text and "cycle" in text


def test_get_ready_work_is_declared_a_read():
    spec = CATALOG["get_ready_work"]
    assert spec.hints.read_only and not spec.write and spec.group == "memory"
    assert "priority" in spec.description


async def _two_memories(c: Client, projects: dict[str, Path]) -> None:
    for name in ("alpha", "beta"):
        await _ok(c, "log_decision", {"summary": f"Use WAL in {name}", "workspace": str(projects[name])})


@MODES
async def test_search_across_workspaces_names_the_workspace_of_every_result(server_factory, projects, mode):
    alpha, beta = str(projects["alpha"]), str(projects["beta"])
    async with Client(server_factory(), mode=mode) as c:
        await _two_memories(c, projects)
        plain = await _ok(c, "search", {"query": "WAL", "mode": "words", "workspace": alpha})
        assert [hit.get("workspace") for hit in plain["results"]] == [None]  # unchanged without `workspaces`
        both = await _ok(c, "search", {"query": "WAL", "mode": "words", "workspace": alpha, "workspaces": [beta]})
        found = sorted((hit["workspace"], hit["title"]) for hit in both["results"])
        assert found == [(alpha, "Use WAL in alpha"), (beta, "Use WAL in beta")]
        assert [w["root"] for w in both["workspaces"]] == [alpha, beta]
        again = await _ok(c, "search", {"query": "WAL", "mode": "words", "workspace": alpha, "workspaces": [alpha]})
        assert len(again["results"]) == 1  # a workspace listed twice is searched once


@MODES
async def test_every_listed_workspace_is_checked_as_the_workspace_argument_is(server_factory, projects, tmp_path, mode):
    alpha = str(projects["alpha"])
    async with Client(server_factory(), mode=mode) as c:
        await _two_memories(c, projects)
        base = {"query": "WAL", "mode": "words", "workspace": alpha}
        for bad, code in (
            ("beta", "invalid_workspace"),  # relative
            (str(tmp_path / "missing"), "invalid_workspace"),
            ("${workspaceFolder}", "invalid_workspace"),
            ("/", "workspace_denied"),
        ):
            got, text = await _error(c, "search", {**base, "workspaces": [bad]})
            assert got == code, (bad, text)


@MODES
async def test_listed_workspaces_outside_the_clients_roots_are_refused(server_factory, projects, mode):
    alpha, beta = str(projects["alpha"]), str(projects["beta"])
    cb = roots_callback([[projects["alpha"]]])
    async with Client(server_factory(), mode=mode, list_roots_callback=cb) as c:
        await _ok(c, "log_decision", {"summary": "Use WAL in alpha", "workspace": alpha})
        code, text = await _error(c, "search", {"query": "WAL", "workspace": alpha, "workspaces": [beta]})
        assert code == "workspace_denied" and beta in text
        # A handle minted under the roots skips the roots question on the 2026-07-28 era: the extra
        # workspaces are still bounded by the roots the handle was checked against.
        handle = (await _ok(c, "use_workspace", {"workspace": alpha})).get("handle") or alpha
        code, text = await _error(c, "search", {"query": "WAL", "workspace": handle, "workspaces": [beta]})
        assert code == "workspace_denied", text


@MODES
async def test_a_listed_workspace_outside_the_servers_allowed_roots_is_refused(server_factory, projects, mode):
    alpha, beta = str(projects["alpha"]), str(projects["beta"])
    async with Client(server_factory(transport="http", allow_roots=(projects["alpha"],)), mode=mode) as c:
        code, _ = await _error(c, "search", {"query": "WAL", "workspace": alpha, "workspaces": [beta]})
        assert code == "workspace_denied"


async def test_a_listed_workspace_whose_config_denies_search_is_refused(server_factory, projects):
    alpha, beta = str(projects["alpha"]), str(projects["beta"])
    (projects["beta"] / ".homeport").mkdir()
    (projects["beta"] / ".homeport" / "config.toml").write_text('[tools]\ndeny = ["search"]\n')
    async with Client(server_factory()) as c:
        code, text = await _error(c, "search", {"query": "WAL", "workspace": alpha, "workspaces": [beta]})
        assert code == "tool_not_allowed" and "deny" in text


async def test_a_forwarded_call_naming_other_workspaces_is_refused(runtime_factory, projects):
    """An owner never knows the roots of the client behind the instance that forwarded the call."""
    pipeline = CallPipeline(runtime_factory())
    spec = CATALOG["search"]
    arguments = {"query": "WAL", "workspace": str(projects["alpha"]), "workspaces": [str(projects["beta"])]}
    with pytest.raises(WorkspaceError, match="roots"):
        pipeline.call_blocking(spec, arguments, LocalRequest(forwarded=True))
    result = pipeline.call_blocking(spec, arguments, LocalRequest())
    assert [w["root"] for w in result["workspaces"]] == [str(projects["alpha"]), str(projects["beta"])]
