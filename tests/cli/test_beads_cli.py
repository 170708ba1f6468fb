"""The beads flow from the shell: create, block, ready, close; and search across several workspaces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from homeport.cli import cli


@pytest.fixture
def runner(shell_home) -> CliRunner:
    return CliRunner()


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root.resolve()


def run(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(cli, list(args))
    assert result.exit_code == 0, (result.output, result.stderr)
    return result.stdout


def call(runner: CliRunner, *args: str) -> dict:
    return json.loads(run(runner, *args, "--json"))


def test_create_block_ready_close_works_from_the_shell(runner, project):
    schema = call(runner, "progress", "add", "TODO", "schema")["id"]
    api = call(runner, "progress", "add", "TODO", "api")["id"]
    linked = call(runner, "link", "progress", str(api), "blocked_by", "progress", str(schema))
    assert (linked["source_id"], linked["relationship"], linked["target_id"]) == (schema, "blocks", api)
    ready = call(runner, "ready")
    assert [(i["id"], i["ready_because"]) for i in ready["items"]] == [(schema, "no blockers")]
    text = run(runner, "ready")
    assert "schema" in text and "no blockers" in text and f"progress {api}" in text  # the blocked one, named
    run(runner, "progress", "update", str(schema), "--status", "DONE")
    assert [i["id"] for i in call(runner, "ready")["items"]] == [api]


def test_a_cycle_is_refused_from_the_shell_in_one_line(runner, project):
    a = call(runner, "progress", "add", "TODO", "a")["id"]
    b = call(runner, "progress", "add", "TODO", "b")["id"]
    run(runner, "link", "progress", str(a), "blocks", "progress", str(b))
    result = runner.invoke(cli, ["link", "progress", str(b), "blocks", "progress", str(a)])
    assert result.exit_code == 1 and f"progress {b} blocks progress {a} blocks progress {b}" in result.stderr


def test_ready_help_says_how_it_orders_without_a_priority_field(runner):
    out = run(runner, "ready", "--help")
    assert "Example: homeport ready" in out and "priority" in out


def test_search_in_other_workspaces_names_the_workspace_of_each_hit(runner, project, tmp_path):
    other = tmp_path / "tools"
    (other / ".git").mkdir(parents=True)
    run(runner, "decisions", "add", "Use WAL here")
    run(runner, "decisions", "add", "Use WAL there", "--workspace", str(other))
    found = call(runner, "search", "WAL", "--mode", "words", "--in", str(other))
    assert sorted(hit["workspace"] for hit in found["results"]) == sorted([str(project), str(other.resolve())])
    text = run(runner, "search", "WAL", "--mode", "words", "--in", str(other))
    assert "tools" in text and "shop" in text
