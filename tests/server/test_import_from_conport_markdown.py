"""import_from kind=conport and kind=markdown over MCP (workspace files only) and from the shell."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from homeport.cli import cli
from homeport.cli import importers as cli_importers

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).parents[1] / "fixtures"
CONPORT = FIXTURES / "conport" / "v0.3.13"
INSTRUCTIONS = FIXTURES / "instructions"


async def test_an_agent_imports_the_conport_database_of_its_workspace(server_factory, projects):
    shutil.copytree(CONPORT / "context_portal", projects["alpha"] / "context_portal")
    args = {"kind": "conport", "source": ".", "workspace": str(projects["alpha"])}
    async with Client(server_factory()) as c:
        first = await c.call_tool("import_from", args)
        again = await c.call_tool("import_from", args)
        tree = await c.call_tool("get_progress", {"tree": True, "workspace": args["workspace"]})
    assert not first.is_error, first.content[0].text
    assert first.structured_content["created"]["progress"] == 4 and first.structured_content["created"]["link"] == 4
    assert sum(again.structured_content["created"].values()) == 0
    assert again.structured_content["unchanged"] == sum(first.structured_content["created"].values())
    assert len(tree.structured_content["progress"][0]["children"]) == 2


async def test_an_agent_cannot_import_a_conport_database_outside_its_workspace(server_factory, projects):
    shutil.copytree(CONPORT / "context_portal", projects["beta"] / "context_portal")
    args = {"kind": "conport", "source": str(projects["beta"]), "workspace": str(projects["alpha"])}
    async with Client(server_factory()) as c:
        r = await c.call_tool("import_from", args)
    assert r.structured_content["error"]["code"] == "invalid_item"
    assert not (projects["alpha"] / ".homeport").exists()


async def test_an_agent_imports_the_instruction_files_of_its_workspace(server_factory, projects, tmp_path):
    for entry in INSTRUCTIONS.iterdir():
        (shutil.copytree if entry.is_dir() else shutil.copy)(entry, projects["alpha"] / entry.name)
    outside = tmp_path / "private.md"
    outside.write_text("# Private\n\nnot for the agent\n")
    (projects["alpha"] / "docs").mkdir()
    (projects["alpha"] / "docs" / "AGENTS.md").symlink_to(outside)
    args = {"kind": "markdown", "source": ".", "workspace": str(projects["alpha"])}
    async with Client(server_factory()) as c:
        r = await c.call_tool("import_from", args)
        patterns = await c.call_tool("get_system_patterns", {"workspace": args["workspace"]})
    assert not r.is_error, r.content[0].text
    assert r.structured_content["created"]["system_pattern"] == 6
    [skipped] = r.structured_content["skipped"]
    assert skipped["where"] == "docs/AGENTS.md" and "outside the workspace" in skipped["reason"]
    descriptions = " ".join(p["description"] for p in patterns.structured_content["system_patterns"])
    assert "source: CLAUDE.md:10" in descriptions and "not for the agent" not in descriptions


async def test_a_secret_in_an_instruction_file_refuses_the_import(server_factory, projects):
    (projects["alpha"] / "CLAUDE.md").write_text(
        "# Deploy\n\nThe staging database is postgresql://shop:Sup3rS3cretPw@db.internal/shop\n"
    )
    args = {"kind": "markdown", "source": "CLAUDE.md", "workspace": str(projects["alpha"])}
    async with Client(server_factory()) as c:
        r = await c.call_tool("import_from", args)
    assert r.structured_content["error"]["code"] == "secret_detected"
    assert "CLAUDE.md.Deploy" in r.structured_content["error"]["message"]


async def test_a_secret_in_a_conport_row_refuses_the_import(server_factory, projects):
    shutil.copytree(CONPORT / "context_portal", projects["alpha"] / "context_portal")
    with sqlite3.connect(projects["alpha"] / "context_portal" / "context.db") as conn:
        conn.execute("UPDATE decisions SET rationale = 'password in postgresql://a:Hunter2Pass@db/x' WHERE id = 2")
    conn.close()
    args = {"kind": "conport", "source": ".", "workspace": str(projects["alpha"])}
    async with Client(server_factory()) as c:
        r = await c.call_tool("import_from", args)
    assert r.structured_content["error"]["code"] == "secret_detected"
    assert "decisions.2.rationale" in r.structured_content["error"]["message"]


def test_the_shell_imports_conport_with_a_dry_run_first(shell_in_project, tmp_path):
    shutil.copytree(CONPORT, tmp_path / "old-shop")
    runner = CliRunner()
    dry = runner.invoke(cli, ["import-from", "conport", "../old-shop", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    words = " ".join(dry.stdout.split())
    assert "would import product context, active context, 2 decision(s), 4 progress entry(ies)" in words
    assert "context_links 4" in words and "deleted in ConPort" in words
    assert not (shell_in_project / ".homeport").exists()
    done = json.loads(runner.invoke(cli, ["import-from", "conport", "../old-shop", "--json"]).stdout)
    assert done["created"]["system_pattern"] == 2
    again = runner.invoke(cli, ["import-from", "conport", "../old-shop"])
    assert "imported nothing new" in again.stdout and "unchanged 17" in again.stdout
    missing = runner.invoke(cli, ["import-from", "conport", "."])
    assert missing.exit_code == 1 and "context_portal/context.db" in missing.stderr


def test_the_shell_imports_instructions_and_follows_edits(shell_in_project):
    shutil.copy(INSTRUCTIONS / "CLAUDE.md", shell_in_project / "CLAUDE.md")
    runner = CliRunner()
    first = runner.invoke(cli, ["import-from", "markdown", "."])
    assert first.exit_code == 0, first.output
    assert "imported 2 system pattern(s), 3 custom data item(s)" in " ".join(first.stdout.split())
    text = (
        (shell_in_project / "CLAUDE.md")
        .read_text()
        .replace("## Commands\n", "## Commands\n\n- `make lint` runs ruff\n")
    )
    (shell_in_project / "CLAUDE.md").write_text(text.replace("### Testing", "### Tests"))
    second = runner.invoke(cli, ["import-from", "markdown", "CLAUDE.md"])
    words = " ".join(second.stdout.split())
    assert "imported 1 system pattern(s)" in words and "updated 1, moved 2, unchanged 1" in words
    assert "CLAUDE.md > Architecture > Testing" in words  # stale: the heading was renamed


def test_a_large_source_shows_a_progress_bar_on_stderr(shell_in_project, tmp_path, monkeypatch):
    shutil.copytree(CONPORT, tmp_path / "old-shop")
    monkeypatch.setattr(cli_importers, "PROGRESS_FROM_ROWS", 10)
    seen: list[tuple[int, int]] = []
    original = cli_importers.ProgressReporter.__call__

    def spy(self, done: int, total: int) -> None:
        seen.append((done, total))
        original(self, done, total)

    monkeypatch.setattr(cli_importers.ProgressReporter, "__call__", spy)
    result = CliRunner().invoke(cli, ["import-from", "conport", "../old-shop", "--json"])
    assert result.exit_code == 0, result.output
    assert seen[-1][0] == seen[-1][1] == len(seen)
    assert json.loads(result.stdout)["created"]["decision"] == 2  # the bar stays off stdout
