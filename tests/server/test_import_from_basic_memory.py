"""import_from kind=basic-memory over MCP (workspace files only) and from the shell."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from homeport.cli import cli

pytestmark = pytest.mark.anyio
SHOP = Path(__file__).parents[1] / "fixtures" / "basic_memory" / "shop"


async def test_an_agent_imports_the_basic_memory_project_of_its_workspace(server_factory, projects, tmp_path):
    notes = projects["alpha"] / "notes"
    shutil.copytree(SHOP, notes)
    outside = tmp_path / "private.md"
    outside.write_text("---\ntitle: Private\n---\n\n- [decision] not for the agent\n")
    (notes / "Private.md").symlink_to(outside)
    args = {"kind": "basic-memory", "source": "notes", "workspace": str(projects["alpha"])}
    async with Client(server_factory()) as c:
        first = await c.call_tool("import_from", args)
        again = await c.call_tool("import_from", args)
        decisions = await c.call_tool("get_decisions", {"workspace": args["workspace"]})
        elsewhere = await c.call_tool(
            "import_from", {**args, "source": str(projects["beta"]), "workspace": str(projects["beta"])}
        )
        outside_call = await c.call_tool("import_from", {**args, "source": str(tmp_path)})
    assert not first.is_error, first.content[0].text
    assert first.structured_content["created"]["decision"] == 4 and first.structured_content["created"]["link"] == 9
    assert any("outside the workspace" in s["reason"] for s in first.structured_content["skipped"])
    assert sum(again.structured_content["created"].values()) == 0
    assert again.structured_content["unchanged"] == sum(first.structured_content["created"].values())
    summaries = {d["summary"] for d in decisions.structured_content["decisions"]}
    assert "Use SQLite for the store" in summaries and "not for the agent" not in summaries
    assert not elsewhere.is_error  # an empty project directory imports nothing
    assert outside_call.structured_content["error"]["code"] == "invalid_item"


async def test_a_secret_in_a_note_refuses_the_import(server_factory, projects):
    notes = projects["alpha"] / "notes"
    notes.mkdir()
    (notes / "Deploy.md").write_text(
        "---\ntitle: Deploy\n---\n\n- [tech] Staging is postgresql://shop:Sup3rS3cretPw@db.internal/shop\n"
    )
    args = {"kind": "basic-memory", "source": "notes", "workspace": str(projects["alpha"])}
    async with Client(server_factory()) as c:
        r = await c.call_tool("import_from", args)
    assert r.structured_content["error"]["code"] == "secret_detected"
    assert "Deploy.md" in r.structured_content["error"]["message"]
    assert not (projects["alpha"] / ".homeport").exists()


def test_the_shell_imports_a_basic_memory_project_with_a_dry_run_first(shell_in_project, tmp_path):
    shutil.copytree(SHOP, tmp_path / "basic-memory")
    runner = CliRunner()
    dry = runner.invoke(cli, ["import-from", "basic-memory", "../basic-memory", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    words = " ".join(dry.stdout.split())
    assert "would import 4 decision(s), 2 system pattern(s), 2 custom data item(s), 9 link(s)" in words
    assert "Payment Gateway" in words
    assert not (shell_in_project / ".homeport").exists()
    done = json.loads(runner.invoke(cli, ["import-from", "basic-memory", "../basic-memory", "--json"]).stdout)
    assert done["created"]["system_pattern"] == 2
    again = runner.invoke(cli, ["import-from", "basic-memory", "../basic-memory"])
    assert "imported nothing new" in again.stdout and "unchanged 17" in again.stdout
    missing = runner.invoke(cli, ["import-from", "basic-memory", "no-such-dir"])
    assert missing.exit_code == 1 and "basic-memory project" in missing.stderr
