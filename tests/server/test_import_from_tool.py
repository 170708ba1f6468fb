"""import_from over MCP (files of the workspace only) and from the shell (any of the user's files)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from homeport.cli import cli

pytestmark = pytest.mark.anyio
SHOP = Path(__file__).parents[1] / "fixtures" / "memory_jsonl" / "shop.jsonl"


async def test_an_agent_imports_a_file_of_its_workspace_by_relative_path(server_factory, projects):
    shutil.copy(SHOP, projects["alpha"] / "memory.jsonl")
    ws = str(projects["alpha"])
    async with Client(server_factory()) as c:
        r = await c.call_tool("import_from", {"kind": "memory-jsonl", "source": "memory.jsonl", "workspace": ws})
        again = await c.call_tool("import_from", {"kind": "memory-jsonl", "source": "memory.jsonl", "workspace": ws})
    assert not r.is_error, r.content[0].text
    assert r.structured_content["created"]["link"] == 4 and r.structured_content["workspace"]["root"] == ws
    assert sum(again.structured_content["created"].values()) == 0


async def test_an_agent_cannot_read_a_file_outside_its_workspace(server_factory, projects):
    outside = projects["beta"] / "memory.jsonl"
    shutil.copy(SHOP, outside)
    async with Client(server_factory()) as c:
        r = await c.call_tool(
            "import_from", {"kind": "memory-jsonl", "source": str(outside), "workspace": str(projects["alpha"])}
        )
    assert r.structured_content["error"]["code"] == "invalid_item"
    assert "outside the workspace" in r.structured_content["error"]["message"]
    assert not (projects["alpha"] / ".homeport").exists()


async def test_a_dry_run_on_a_workspace_without_memory_creates_nothing(server_factory, projects):
    shutil.copy(SHOP, projects["alpha"] / "memory.jsonl")
    args = {"kind": "memory-jsonl", "source": "memory.jsonl", "dry_run": True, "workspace": str(projects["alpha"])}
    async with Client(server_factory()) as c:
        r = await c.call_tool("import_from", args)
    assert r.structured_content["created"]["decision"] == 1 and r.structured_content["dry_run"] is True
    assert not (projects["alpha"] / ".homeport").exists()


async def test_an_observation_holding_a_secret_refuses_the_whole_import(server_factory, projects):
    record = {
        "type": "entity",
        "name": "Staging",
        "entityType": "env",
        "observations": ["ok", "postgresql://a:Hunter2Pass@db/x"],
    }
    (projects["alpha"] / "memory.jsonl").write_text(json.dumps(record))
    args = {"kind": "memory-jsonl", "source": "memory.jsonl", "workspace": str(projects["alpha"])}
    async with Client(server_factory()) as c:
        refused = await c.call_tool("import_from", args)
        allowed = await c.call_tool("import_from", {**args, "allow_secrets": True})
        overrides = await c.call_tool(
            "get_custom_data", {"category": "SecretOverrides", "workspace": args["workspace"]}
        )
    assert refused.structured_content["error"]["code"] == "secret_detected"
    assert "entities.Staging.observations[1]" in refused.structured_content["error"]["message"]
    assert allowed.structured_content["created"]["custom_data"] == 1
    assert overrides.structured_content["items"][0]["value"]["tool"] == "import_from"


def test_the_shell_reads_any_file_relative_to_the_current_directory(shell_home, tmp_path, monkeypatch):
    (tmp_path / "downloads").mkdir()
    shutil.copy(SHOP, tmp_path / "downloads" / "memory.jsonl")
    (tmp_path / "shop" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "shop")
    runner = CliRunner()
    dry = runner.invoke(cli, ["import-from", "memory-jsonl", "../downloads/memory.jsonl", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "would import 1 decision(s), 2 system pattern(s), 4 custom data item(s), 4 link(s)" in " ".join(
        dry.stdout.split()
    )
    assert not (tmp_path / "shop" / ".homeport").exists()
    done = json.loads(runner.invoke(cli, ["import-from", "memory-jsonl", "../downloads/memory.jsonl", "--json"]).stdout)
    assert done["created"]["custom_data"] == 4
    again = runner.invoke(cli, ["import-from", "memory-jsonl", "../downloads/memory.jsonl"])
    assert "imported nothing new" in again.stdout and "unchanged 11" in again.stdout
    missing = runner.invoke(cli, ["import-from", "memory-jsonl", "nope.jsonl"])
    assert missing.exit_code == 1 and "is not a file" in missing.stderr
