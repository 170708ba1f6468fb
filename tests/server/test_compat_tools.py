"""ConPort's and DevDB's tool names (`--tools conport`, `--tools devdb`): aliases that run Homeport's tools
through the whole call path, checked against ConPort's own tools/list, through the real SDK client in both eras."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from test_tools_inmemory import roots_callback

from homeport.core import pipeline as pipeline_module
from homeport.core import tools as _tools  # noqa: F401  (declares every tool)
from homeport.core.catalog import CATALOG, COMPAT_GROUPS, unknown_tool
from homeport.core.pipeline import PERFORM_STEPS, STEPS, CallPipeline, LocalRequest
from homeport.errors import (
    ConfigError,
    ItemNotFoundError,
    ToolNotAllowedError,
    UnknownArgumentError,
)

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "conport" / "tools.json"
CONPORT_GROUPS = ("workspace", "conport", "devdb")


def _snapshot() -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in json.loads(FIXTURE.read_text())["tools"]}


def _ours() -> dict[str, dict[str, Any]]:
    out = {}
    for name, spec in CATALOG.aliases("conport").items():
        schema = spec._arguments_model.model_json_schema()
        out[name] = {"required": sorted(schema.get("required", [])), "arguments": [p.name for p in spec.arguments]}
    return out


def test_the_conport_group_has_conports_tool_names_and_required_arguments():
    theirs, ours = _snapshot(), _ours()
    assert len(theirs) == 30
    assert sorted(ours) == sorted(theirs)
    for name, tool in theirs.items():
        assert ours[name]["required"] == tool["required"], name
        # Every argument ConPort takes is taken (allow_secrets is Homeport's own, optional).
        assert set(tool["arguments"]) <= set(ours[name]["arguments"]), name
        assert set(ours[name]["arguments"]) - set(tool["arguments"]) <= {"allow_secrets"}, name


def _conport_command() -> str | None:
    for candidate in (os.environ.get("CONPORT_MCP"), "/tmp/conport-venv/bin/conport-mcp", shutil.which("conport-mcp")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.mark.skipif(
    _conport_command() is None,
    reason="ConPort is not installed (python3 -m venv /tmp/conport-venv && /tmp/conport-venv/bin/pip install "
    "context-portal-mcp, or CONPORT_MCP=/path/to/conport-mcp); the checked-in snapshot is compared instead",
)
def test_the_conport_group_matches_a_live_conport_servers_tools_list():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from conport_tools import conport_tools

    command = _conport_command()
    assert command is not None
    live = {t["name"]: t for t in anyio.run(conport_tools, command)}
    assert live == _snapshot(), "ConPort's tools changed: run bench/conport_tools.py and update the group"
    ours = _ours()
    assert {n: t["required"] for n, t in live.items()} == {n: o["required"] for n, o in ours.items()}


def test_every_alias_runs_its_tool_with_the_same_effect_scan_and_needs():
    for group in COMPAT_GROUPS:
        for name, alias in CATALOG.aliases(group).items():
            assert alias.alias is not None, name
            target = alias.alias.target
            assert CATALOG[target.name] is target, name  # a tool of the catalog, not a copy
            assert (alias.effect, alias.scan, alias.needs, alias.hints) == (
                target.effect,
                target.scan,
                target.needs,
                target.hints,
            ), name
            assert alias.run is target.run, name
            if alias.alias.workspace_argument is not None:
                assert alias.arguments[0].name == alias.alias.workspace_argument, name


def test_conport_and_memory_are_never_served_together_and_all_means_homeports_own():
    from homeport.server import TOOL_GROUPS, parse_tool_groups

    assert parse_tool_groups("all") == TOOL_GROUPS and "conport" not in TOOL_GROUPS
    assert parse_tool_groups("workspace,conport,devdb") == ("workspace", "conport", "devdb")
    assert parse_tool_groups("all,devdb") == (*TOOL_GROUPS, "devdb")
    with pytest.raises(ConfigError, match="conport and memory"):
        parse_tool_groups("memory,conport")


def test_a_conport_name_with_its_group_off_is_answered_with_the_group_to_serve():
    text = unknown_tool("search_decisions_fts", ("workspace", "memory"))
    assert text.startswith("Unknown tool: search_decisions_fts. ")
    assert "conport" in text and "--tools workspace,conport" in text
    text = unknown_tool("get-tables", ("workspace", "memory", "db"))
    assert "devdb" in text and "--tools workspace,memory,db,devdb" in text


@MODES
async def test_a_conport_session_logs_finds_links_and_deletes_by_conports_names(server_factory, projects, mode):
    ws = str(projects["alpha"])
    async with Client(server_factory(tool_groups=CONPORT_GROUPS), mode=mode) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert {"search_decisions_fts", "get-tables", "log_decision", "where_am_i"} <= names
        assert "search" not in names  # Homeport's own memory group is off

        r = await c.call_tool("update_product_context", {"workspace_id": ws, "content": {"goal": "ship"}})
        assert not r.is_error, r.content
        assert r.structured_content["status"] == "success"
        r = await c.call_tool("get_product_context", {"workspace_id": ws})
        assert r.structured_content["goal"] == "ship"
        assert r.structured_content["workspace"] == {"root": ws, "source": "argument"}

        r = await c.call_tool("log_decision", {"workspace_id": ws, "summary": "Use WAL mode", "tags": ["db"]})
        decision = r.structured_content
        assert decision["summary"] == "Use WAL mode" and decision["timestamp"] and decision["id"] >= 1
        r = await c.call_tool("get_decisions", {"workspace_id": ws, "tags_filter_include_any": ["db"]})
        assert [d["summary"] for d in r.structured_content["result"]] == ["Use WAL mode"]
        r = await c.call_tool("search_decisions_fts", {"workspace_id": ws, "query_term": "WAL"})
        assert [(h["id"], h["summary"]) for h in r.structured_content["result"]] == [(decision["id"], "Use WAL mode")]

        r = await c.call_tool("log_progress", {"workspace_id": ws, "status": "TODO", "description": "Turn WAL on"})
        progress = r.structured_content
        r = await c.call_tool(
            "link_conport_items",
            {
                "workspace_id": ws,
                "source_item_type": "progress_entry",
                "source_item_id": str(progress["id"]),
                "target_item_type": "decision",
                "target_item_id": str(decision["id"]),
                "relationship_type": "implements",
            },
        )
        assert not r.is_error, r.content
        r = await c.call_tool(
            "get_linked_items", {"workspace_id": ws, "item_type": "decision", "item_id": str(decision["id"])}
        )
        assert [i["id"] for i in r.structured_content["result"]] == [progress["id"]]

        r = await c.call_tool(
            "log_custom_data",
            {"workspace_id": ws, "category": "ProjectGlossary", "key": "WAL", "value": "write-ahead log"},
        )
        assert not r.is_error
        r = await c.call_tool("search_project_glossary_fts", {"workspace_id": ws, "query_term": "WAL"})
        assert [h["key"] for h in r.structured_content["result"]] == ["WAL"]

        r = await c.call_tool("delete_decision_by_id", {"workspace_id": ws, "decision_id": decision["id"]})
        assert r.structured_content["status"] == "success"
        r = await c.call_tool("get_decisions", {"workspace_id": ws})
        assert r.structured_content["result"] == []
        r = await c.call_tool("get_conport_schema", {"workspace_id": ws})
        assert "log_decision" in r.structured_content and "workspace_id" in json.dumps(r.structured_content)


@MODES
async def test_workspace_id_is_resolved_and_guarded_exactly_as_workspace(server_factory, projects, tmp_path, mode):
    """A wrong workspace_id is the same refusal `workspace` gets: never ignored, never a default workspace."""
    alpha, beta = str(projects["alpha"]), str(projects["beta"])
    # The server has a default workspace: a dropped workspace_id would land there.
    server = server_factory(tool_groups=CONPORT_GROUPS, workspace=beta)
    async with Client(server, mode=mode) as c:
        for bad, code in (
            ("relative/path", "invalid_workspace"),
            (str(tmp_path / "missing"), "invalid_workspace"),
            ("${workspaceFolder}", "invalid_workspace"),
        ):
            r = await c.call_tool("log_decision", {"workspace_id": bad, "summary": "x"})
            assert r.is_error, bad
            assert r.structured_content["error"]["code"] == code, (bad, r.content)
        r = await c.call_tool("log_decision", {"summary": "x"})  # required, as ConPort has it
        assert r.is_error and "workspace_id" in r.content[0].text
        r = await c.call_tool("log_decision", {"workspace_id": alpha, "workspace": beta, "summary": "x"})
        assert r.is_error and r.structured_content["error"]["code"] == "unknown_argument"
        r = await c.call_tool("get_decisions", {"workspace_id": beta})
        assert r.structured_content["result"] == []  # nothing above landed in the default workspace
    cb = roots_callback([[projects["beta"]]])
    async with Client(server_factory(tool_groups=CONPORT_GROUPS), mode=mode, list_roots_callback=cb) as c:
        for tool, args in (("log_decision", {"summary": "x"}), ("get_conport_schema", {}), ("get-tables", {})):
            key = "projectRoot" if tool.startswith("get-") else "workspace_id"
            r = await c.call_tool(tool, {key: alpha, **args})
            assert r.is_error and r.structured_content["error"]["code"] == "workspace_denied", (tool, r.content)


async def test_an_alias_passes_every_step_of_its_tool_and_runs_it(runtime_factory, projects, monkeypatch):
    routes: list[Any] = []
    original = pipeline_module.Route

    class Recorded(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            routes.append(self)

    monkeypatch.setattr(pipeline_module, "Route", Recorded)
    runtime = runtime_factory(tool_groups=CONPORT_GROUPS)
    pipeline = CallPipeline(runtime)
    ws = str(projects["alpha"])
    alias = CATALOG.aliases("conport")["log_decision"]
    result = await pipeline.call(alias, {"workspace_id": ws, "summary": "Cache in Redis"}, LocalRequest())
    (route,) = routes
    assert route.spec is CATALOG["log_decision"] and route.alias is alias
    assert route.steps == [*STEPS, *PERFORM_STEPS]
    assert result["written_by"]["tool"] == "log_decision" and result["timestamp"]
    with pytest.raises(ItemNotFoundError, match="999"):  # the entry and its link are one write: neither
        pipeline.call_blocking(
            CATALOG.aliases("conport")["log_progress"],
            {
                "workspace_id": ws,
                "status": "TODO",
                "description": "x",
                "linked_item_type": "decision",
                "linked_item_id": "999",
            },
            LocalRequest(),
        )
    with pytest.raises(UnknownArgumentError, match="workspace_id"):
        pipeline.call_blocking(alias, {"workspace": ws, "summary": "x"}, LocalRequest())


async def test_an_alias_write_carrying_a_secret_is_refused_like_the_tool(server_factory, projects):
    ws = str(projects["alpha"])
    secret = "AKIA" + "IOSFODNN7EXAMPLE"
    async with Client(server_factory(tool_groups=CONPORT_GROUPS)) as c:
        r = await c.call_tool("log_decision", {"workspace_id": ws, "summary": f"key {secret}"})
        assert r.is_error and r.structured_content["error"]["code"] == "secret_detected", r.content
        r = await c.call_tool("get_decisions", {"workspace_id": ws})
        assert r.structured_content["result"] == []


@pytest.fixture
def sqlite_project(projects: dict[str, Path]) -> Path:
    root = projects["alpha"]
    db = sqlite3.connect(root / "db.sqlite3")
    db.execute("CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL)")
    db.executemany("INSERT INTO books (title) VALUES (?)", [("Dune",), ("Emma",)])
    db.commit()
    db.close()
    return root


@MODES
async def test_devdb_names_with_project_root_run_the_database_tools(server_factory, sqlite_project, mode):
    ws = str(sqlite_project)
    before = (sqlite_project / "db.sqlite3").read_bytes()
    async with Client(server_factory(tool_groups=CONPORT_GROUPS), mode=mode) as c:
        r = await c.call_tool("get-tables", {"projectRoot": ws})
        assert "books" in r.structured_content["tables"]
        assert r.structured_content["workspace"] == {"root": ws, "source": "argument"}
        r = await c.call_tool("get-schema", {"projectRoot": ws, "table": "books"})
        assert "CREATE TABLE" in r.structured_content["schema"].upper()
        r = await c.call_tool("get-database-type", {"projectRoot": ws})
        assert r.structured_content["type"] == "sqlite"
        r = await c.call_tool("run-query", {"projectRoot": ws, "query": "SELECT title FROM books ORDER BY id"})
        assert r.structured_content["result"] == [{"title": "Dune"}, {"title": "Emma"}]
        r = await c.call_tool("run-query", {"projectRoot": ws, "query": "DELETE FROM books"})
        assert r.is_error
        r = await c.call_tool("run-query", {"projectRoot": "relative", "query": "SELECT 1"})
        assert r.is_error and r.structured_content["error"]["code"] == "invalid_workspace"
    assert (sqlite_project / "db.sqlite3").read_bytes() == before


def _config(root: Path, text: str) -> None:
    (root / ".homeport").mkdir(exist_ok=True)
    (root / ".homeport" / "config.toml").write_text(text)


@MODES
async def test_a_project_that_turns_its_database_off_refuses_the_database_tools(
    server_factory, sqlite_project, projects, mode
):
    _config(sqlite_project, "[database]\nenabled = false\n")
    ws = str(sqlite_project)
    async with Client(server_factory(tool_groups=(*CONPORT_GROUPS, "db")), mode=mode) as c:
        for tool, args in (
            ("get_tables", {"workspace": ws}),
            ("run_query", {"workspace": ws, "query": "SELECT 1"}),
            ("get-tables", {"projectRoot": ws}),
        ):
            r = await c.call_tool(tool, args)
            assert r.is_error and r.structured_content["error"]["code"] == "tool_not_allowed", (tool, r.content)
            assert "enabled = false" in r.content[0].text and str(sqlite_project) in r.content[0].text
        r = await c.call_tool("log_decision", {"workspace_id": ws, "summary": "memory stays on"})
        assert not r.is_error
        _config(projects["beta"], "[database]\nenabled = true\n")
        r = await c.call_tool("get_tables", {"workspace": str(projects["beta"])})
        assert r.structured_content["error"]["code"] != "tool_not_allowed"  # no database there, but not off


@MODES
async def test_a_project_deny_list_refuses_those_tools_by_either_name(server_factory, projects, mode):
    alpha, beta = projects["alpha"], projects["beta"]
    _config(alpha, '[tools]\ndeny = ["log_decision", "get-tables"]\n')
    async with Client(server_factory(tool_groups=CONPORT_GROUPS), mode=mode) as c:
        r = await c.call_tool("log_decision", {"workspace_id": str(alpha), "summary": "x"})
        assert r.is_error and r.structured_content["error"]["code"] == "tool_not_allowed"
        assert "[tools] deny" in r.content[0].text
        r = await c.call_tool("get-tables", {"projectRoot": str(alpha)})
        assert r.structured_content["error"]["code"] == "tool_not_allowed"
        r = await c.call_tool("log_decision", {"workspace_id": str(beta), "summary": "x"})
        assert not r.is_error  # only that project
    async with Client(server_factory()) as c:
        r = await c.call_tool("log_decision", {"workspace": str(alpha), "summary": "x"})
        assert r.structured_content["error"]["code"] == "tool_not_allowed"
        r = await c.call_tool("get_decisions", {"workspace": str(alpha)})
        assert r.structured_content["decisions"] == []


def test_a_bad_switch_is_a_config_error_naming_the_file(runtime_factory, projects):
    _config(projects["alpha"], '[tools]\ndeny = "log_decision"\n')
    pipeline = CallPipeline(runtime_factory())
    with pytest.raises(ConfigError, match=r"deny must be a list"):
        pipeline.call_blocking(CATALOG["get_decisions"], {"workspace": str(projects["alpha"])}, LocalRequest())
    _config(projects["alpha"], '[tools]\ndeny = ["get_decisions"]\n')  # changed: read again
    with pytest.raises(ToolNotAllowedError):
        pipeline.call_blocking(CATALOG["get_decisions"], {"workspace": str(projects["alpha"])}, LocalRequest())


@MODES
async def test_log_progress_with_a_linked_item_logs_and_links_in_one_write_or_does_neither(
    server_factory, projects, mode
):
    """ConPort's custom instructions log progress with `linked_item_type`/`linked_item_id`; the alias used to
    refuse them. Now the entry and its link are one write: a missing target leaves neither behind."""
    ws = str(projects["alpha"])
    async with Client(server_factory(tool_groups=CONPORT_GROUPS), mode=mode) as c:
        decision = (await c.call_tool("log_decision", {"workspace_id": ws, "summary": "Use WAL"})).structured_content
        r = await c.call_tool(
            "log_progress",
            {
                "workspace_id": ws,
                "status": "IN_PROGRESS",
                "description": "Turn WAL on",
                "linked_item_type": "decision",
                "linked_item_id": str(decision["id"]),
            },
        )
        assert not r.is_error, r.content
        entry = r.structured_content
        linked = await c.call_tool(
            "get_linked_items", {"workspace_id": ws, "item_type": "decision", "item_id": str(decision["id"])}
        )
        assert [(i["id"], i["relationship"]) for i in linked.structured_content["result"]] == [
            (entry["id"], "relates_to_progress")
        ]
        missing = await c.call_tool(
            "log_progress",
            {
                "workspace_id": ws,
                "status": "TODO",
                "description": "orphan",
                "linked_item_type": "decision",
                "linked_item_id": "999",
            },
        )
        assert missing.is_error and "999" in missing.content[0].text
        half = await c.call_tool(
            "log_progress", {"workspace_id": ws, "status": "TODO", "description": "half", "linked_item_id": "1"}
        )
        assert half.is_error and "linked_item_type" in half.content[0].text
        listed = await c.call_tool("get_progress", {"workspace_id": ws})
        assert [p["description"] for p in listed.structured_content["result"]] == ["Turn WAL on"]
