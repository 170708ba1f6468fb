"""The dashboard's own tools: run by the pipeline like every tool, never offered to MCP clients."""

from __future__ import annotations

from pathlib import Path

import pytest

from homeport.core.catalog import CATALOG, DASHBOARD
from homeport.core.pipeline import CallPipeline, LocalRequest
from homeport.errors import InvalidItemError, ItemNotFoundError, SecretDetectedError
from homeport.server.app import build_server
from homeport.store import decisions

pytestmark = pytest.mark.anyio


def run(runtime, name: str, **arguments):
    spec = CATALOG[name]
    return CallPipeline(runtime).call_blocking(spec, arguments, LocalRequest())


@pytest.fixture
def runtime(make_app, project: Path):
    _, runtime = make_app(workspace=str(project))
    return runtime


async def test_no_dashboard_tool_is_listed_to_an_mcp_client(runtime):
    dashboard_tools = {spec.name for spec in CATALOG.in_groups([DASHBOARD])}
    assert dashboard_tools == {
        "memory_overview",
        "decision_page",
        "get_item",
        "get_item_writes",
        "sync_conflicts",
        "resolve_sync_conflicts",
    }
    listed = {tool.name for tool in await build_server(runtime).list_tools()}
    assert listed and not listed & dashboard_tools


def test_a_decision_is_corrected_in_place_keeping_what_is_not_given(runtime, project: Path):
    logged = run(runtime, "log_decision", summary="Use WAL", rationale="fast", tags=["db"])
    corrected = run(runtime, "update_decision", decision_id=logged["id"], summary="Use SQLite WAL")
    assert corrected["summary"] == "Use SQLite WAL" and corrected["rationale"] == "fast" and corrected["tags"] == ["db"]
    assert corrected["updated_at"] > logged["updated_at"]
    assert corrected["workspace"]["root"] == str(project)
    item = run(runtime, "get_item", item_type="decision", item_id=logged["id"])["item"]
    assert item["summary"] == "Use SQLite WAL" and item["tags"] == ["db"] and item["created_at"] == logged["created_at"]
    cleared = run(runtime, "update_decision", decision_id=logged["id"], rationale="", tags=[])
    assert cleared["rationale"] is None and cleared["tags"] == []
    hits = run(runtime, "search", query="SQLite")["results"]
    assert [h["id"] for h in hits] == [logged["id"]]


def test_a_correction_is_refused_like_any_write(runtime):
    logged = run(runtime, "log_decision", summary="Use WAL")
    with pytest.raises(InvalidItemError, match="summary is empty"):
        run(runtime, "update_decision", decision_id=logged["id"], summary="  ")
    with pytest.raises(ItemNotFoundError, match="decision 999"):
        run(runtime, "update_decision", decision_id=999, summary="x")
    with pytest.raises(SecretDetectedError):  # the pipeline scans its arguments as for every write
        run(runtime, "update_decision", decision_id=logged["id"], rationale="key AKIAIOSFODNN7EXAMPLE")


def test_a_page_of_decisions_counts_what_matches(runtime, project: Path):
    store = runtime.stores.get(project, create=True)
    for n in range(7):
        decisions.log_decision(store, f"d{n}", tags=["odd"] if n % 2 else ["even"])
    page = run(runtime, "decision_page", offset=2, limit=3)
    assert page["total"] == 7 and [d["summary"] for d in page["decisions"]] == ["d4", "d3", "d2"]
    odd = run(runtime, "decision_page", tag="ODD")
    assert odd["total"] == 3 and all(d["tags"] == ["odd"] for d in odd["decisions"])
    overview = run(runtime, "memory_overview")
    newest = run(runtime, "decision_page", limit=1)["decisions"][0]
    assert overview["counts"]["decision"] == 7 and overview["last_activity"] == newest["updated_at"]


def test_reads_of_a_workspace_without_memory_create_nothing(runtime, project: Path):
    assert run(runtime, "memory_overview")["counts"] == dict.fromkeys(
        ("decision", "progress", "system_pattern", "custom_data"), 0
    )
    assert run(runtime, "decision_page")["total"] == 0
    with pytest.raises(ItemNotFoundError):
        run(runtime, "get_item", item_type="decision", item_id=1)
    assert not (project / ".homeport").exists()
