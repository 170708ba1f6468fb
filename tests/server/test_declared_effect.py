"""One declared effect per tool: the MCP hints, "resolve as a write" and the --read-only refusal all derive from it.

Issue finding: on a `homeport serve --read-only` server, `run_query("INSERT INTO t VALUES (1)")` on a
workspace whose config allows writes changed the data, and `write_file_by_id` / `delete_file_by_id`
succeeded; the refusal was keyed on the flag that means "resolve this workspace as a write", not on
what the tool does.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from _tool_samples import sample_arguments
from mcp import Client

from homeport.core import tools as _tools  # noqa: F401  (declares every tool)
from homeport.core.catalog import CATALOG, Effect, ToolSpec
from homeport.core.pipeline import CallPipeline, LocalRequest
from homeport.errors import HomeportError, PermissionDeniedError
from homeport.files.directory import DirectoryFile

pytestmark = pytest.mark.anyio

CHANGES = {Effect.WRITE, Effect.UPDATE, Effect.DELETE, Effect.REPLACE}


def every_tool() -> list[ToolSpec]:
    return [CATALOG[name] for name in sorted(CATALOG._specs)]


@pytest.mark.parametrize("spec", every_tool(), ids=lambda s: s.name)
def test_every_tool_derives_its_hints_and_its_write_resolution_from_its_one_effect(spec):
    assert isinstance(spec.effect, Effect)
    assert spec.hints == spec.effect.hints
    assert spec.write == (spec.effect in CHANGES)
    assert spec.hints.read_only == (spec.effect is Effect.READ)


@pytest.mark.parametrize("spec", every_tool(), ids=lambda s: s.name)
def test_under_read_only_every_tool_that_changes_anything_is_refused_before_it_is_resolved(
    spec, runtime_factory, tmp_path
):
    runtime = runtime_factory(read_only=True, cwd=tmp_path)
    pipeline = CallPipeline(runtime)
    arguments = sample_arguments(spec)
    try:
        route = pipeline.decide(spec, arguments, LocalRequest(agent="ada"))
    except PermissionDeniedError as exc:
        refused_for_read_only = "--read-only" in exc.message
        assert refused_for_read_only == (spec.effect in CHANGES), exc.message
    except HomeportError as exc:
        # A later step refused it (no workspace here, no agent in a directory): never a changing tool.
        assert spec.effect not in CHANGES, f"{spec.name} passed the read-only step: {exc.message}"
    else:
        assert spec.effect not in CHANGES, f"{spec.name} was decided on a --read-only server"
        assert route.steps[:2] == ["validate", "read_only"]


@pytest.fixture
def areas(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "data"
    d = DirectoryFile(data / "directory.toml")
    d.add_organization("acme")
    d.add_agent("acme", "ada")
    return {"data": data, "directory": d.path}


def _seed_writable_database(root: Path) -> Path:
    db = root / "db.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    (root / ".homeport").mkdir(exist_ok=True)
    (root / ".homeport" / "config.toml").write_text('[database]\nurl = "sqlite:///db.sqlite3"\nallow_writes = true\n')
    return db


def _rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM t").fetchone()[0])


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_read_only_server_runs_queries_read_only_and_refuses_file_writes_and_deletes(
    server_factory, projects, areas, mode
):
    root = projects["alpha"]
    db = _seed_writable_database(root)
    # The same workspace, served without --read-only, takes the write: the config really allows it.
    async with Client(server_factory(), mode=mode) as c:
        r = await c.call_tool("run_query", {"query": "INSERT INTO t VALUES (1)", "workspace": str(root)})
        assert not r.is_error, r.content[0].text
    assert _rows(db) == 1
    writer = server_factory(agent="ada", data_dir=areas["data"], directory_file=areas["directory"])
    async with Client(writer, mode=mode) as c:
        where = {"folder_id": "ada", "scope": "private", "path": "keep.md"}
        r = await c.call_tool("write_file_by_id", {**where, "content": "kept"})
        assert not r.is_error, r.content[0].text
    kept = areas["data"] / "organizations" / "acme" / "workspaces" / "ada" / "private" / "keep.md"
    assert kept.read_text() == "kept"

    server = server_factory(read_only=True, agent="ada", data_dir=areas["data"], directory_file=areas["directory"])
    async with Client(server, mode=mode) as c:
        r = await c.call_tool("run_query", {"query": "INSERT INTO t VALUES (2)", "workspace": str(root)})
        assert r.is_error, "an INSERT ran on a --read-only server"
        assert r.structured_content["error"]["code"] in ("query_rejected", "permission_denied")
        r = await c.call_tool("run_query", {"query": "SELECT count(*) FROM t", "workspace": str(root)})
        assert not r.is_error and r.structured_content["rows"] == [[1]]
        r = await c.call_tool("write_file_by_id", {**where, "content": "changed"})
        assert r.is_error and r.structured_content["error"]["code"] == "permission_denied"
        assert "--read-only" in r.content[0].text
        r = await c.call_tool("delete_file_by_id", where)
        assert r.is_error and r.structured_content["error"]["code"] == "permission_denied"
        r = await c.call_tool("read_file_by_id", where)
        assert not r.is_error and r.structured_content["content"] == "kept"
    assert _rows(db) == 1
    assert kept.read_text() == "kept"


def test_listed_tools_carry_the_hints_of_their_effect(server_factory):
    import anyio

    async def listed() -> dict[str, Any]:
        async with Client(server_factory()) as c:
            return {t.name: t.annotations for t in (await c.list_tools()).tools}

    for name, hinted in anyio.run(listed).items():
        hints = CATALOG[name].effect.hints
        assert hinted is not None
        assert (hinted.read_only_hint, hinted.destructive_hint, hinted.idempotent_hint) == (
            hints.read_only,
            hints.destructive,
            hints.idempotent,
        ), name
