"""get_context through the MCP binding and from the shell: the same answer, the same workspace."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from mcp import Client

from homeport.cli import cli

pytestmark = pytest.mark.anyio


async def test_get_context_packs_the_contexts_and_matching_items_with_ids(server_factory, projects):
    ws = str(projects["alpha"])
    async with Client(server_factory()) as c:
        await c.call_tool("update_active_context", {"content": {"focus": "search ranking"}, "workspace": ws})
        logged = await c.call_tool("log_decision", {"summary": "Rank search with bm25", "workspace": ws})
        r = await c.call_tool("get_context", {"task": "improve search ranking", "workspace": ws})
    assert not r.is_error, r.content[0].text
    out = r.structured_content
    assert out["workspace"]["root"] == ws and out["token_estimate"] == "ceil(utf8_bytes / 4)"
    assert out["active_context"]["text"] == "focus: search ranking"
    assert [(i["type"], i["id"]) for i in out["items"]] == [("decision", logged.structured_content["id"])]


async def test_a_budget_below_the_minimum_is_refused_by_the_schema(server_factory, projects):
    async with Client(server_factory()) as c:
        r = await c.call_tool("get_context", {"task": "x", "budget_tokens": 10, "workspace": str(projects["alpha"])})
    assert r.is_error


async def test_reading_the_context_of_a_workspace_without_memory_creates_no_store(server_factory, projects):
    async with Client(server_factory()) as c:
        r = await c.call_tool("get_context", {"task": "anything", "workspace": str(projects["beta"])})
    assert not r.is_error and r.structured_content["items"] == []
    assert not (projects["beta"] / ".homeport").exists()


def test_the_shell_command_prints_markdown_and_the_tools_json(shell_home, projects, monkeypatch, tmp_path):
    monkeypatch.chdir(projects["alpha"])
    runner = CliRunner()
    assert runner.invoke(cli, ["glossary", "set", "WAL", "write-ahead log"]).exit_code == 0
    text = runner.invoke(cli, ["context", "--task", "what is the WAL", "--budget", "300"])
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("# Project memory for: what is the WAL")
    assert "- custom_data 1: WAL: write-ahead log" in text.stdout
    as_json = json.loads(runner.invoke(cli, ["context", "--task", "what is the WAL", "--json"]).stdout)
    assert as_json["budget_tokens"] == 2000 and as_json["items"][0]["id"] == 1
    assert runner.invoke(cli, ["context", "show", "active"]).exit_code == 0
    misuse = runner.invoke(cli, ["context", "--task", "x", "show", "active"])
    assert misuse.exit_code == 2
