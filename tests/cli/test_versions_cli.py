"""Item versions from the shell: correct a decision or a pattern, read any item's history, restore, purge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

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


def run(runner: CliRunner, *args: str, input: str | None = None) -> Result:
    result = runner.invoke(cli, list(args), input=input)
    assert result.exit_code == 0, result.output
    return result


def call(runner: CliRunner, *args: str, input: str | None = None) -> dict:
    return json.loads(run(runner, *args, "--json", input=input).stdout)


def fails(runner: CliRunner, *args: str, input: str | None = None) -> Result:
    result = runner.invoke(cli, list(args), input=input)
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_a_decision_corrected_from_the_shell_keeps_its_earlier_text_in_history(runner, project):
    d = call(runner, "decisions", "add", "Use WAL", "--rationale", "fast", "--tag", "db")
    fixed = call(runner, "decisions", "update", str(d["id"]), "--summary", "Use SQLite WAL", "--rationale", "")
    assert (fixed["summary"], fixed["rationale"], fixed["tags"]) == ("Use SQLite WAL", None, ["db"])
    untagged = call(runner, "decisions", "update", str(d["id"]), "--no-tags")
    assert untagged["tags"] == []
    versions = call(runner, "history", "decision", str(d["id"]))["versions"]
    assert [v["fields"]["summary"] for v in versions] == ["Use SQLite WAL", "Use SQLite WAL", "Use WAL"]
    assert versions[2]["fields"]["rationale"] == "fast" and versions[2]["fields"]["tags"] == ["db"]
    assert [v["written_by"]["tool"] for v in versions] == ["update_decision", "update_decision", "log_decision"]
    screen = run(runner, "history", "decision", str(d["id"])).stdout
    assert "fast" in screen and "update_decision" in screen and "log_decision" in screen


def test_a_pattern_is_renamed_by_id_and_a_taken_name_is_refused_in_one_line(runner, project):
    p = call(runner, "patterns", "add", "Repository", "one per table", "--tag", "db")
    call(runner, "patterns", "add", "Cache", "in memory")
    renamed = call(runner, "patterns", "update", str(p["id"]), "--name", "Repository per aggregate")
    assert (renamed["name"], renamed["description"], renamed["tags"]) == (
        "Repository per aggregate",
        "one per table",
        ["db"],
    )
    refused = fails(runner, "patterns", "update", str(p["id"]), "--name", "CACHE")
    assert "already named 'CACHE'" in refused.stderr and "Traceback" not in refused.output
    versions = call(runner, "history", "system_pattern", str(p["id"]))["versions"]
    assert [v["fields"]["name"] for v in versions] == ["Repository per aggregate", "Repository"]


def test_restore_brings_back_a_version_of_any_item_and_of_a_deleted_one(runner, project):
    p = call(runner, "progress", "add", "TODO", "ship")
    call(runner, "progress", "update", str(p["id"]), "--status", "DONE")
    restored = call(runner, "restore", "progress", str(p["id"]), "1")
    assert (restored["restored_version"], restored["version"], restored["item"]["status"]) == (1, 3, "TODO")
    assert "restored" in run(runner, "restore", "progress", str(p["id"]), "2").stdout
    call(runner, "data", "set", "c", "k", "1")
    call(runner, "data", "set", "c", "k", "2")
    call(runner, "data", "delete", "c", "k")
    [latest] = call(runner, "history", "custom_data", "1", "--limit", "1")["versions"]
    assert latest["deleted"] is True
    assert "deleted" in run(runner, "history", "custom_data", "1").stdout
    call(runner, "restore", "custom_data", "1", "1")
    assert [i["value"] for i in call(runner, "data", "get", "c", "k")["items"]] == [1]
    call(runner, "context", "set", "active", '{"focus": "a"}')
    call(runner, "context", "set", "active", '{"focus": "b"}')
    assert call(runner, "restore", "active_context", "1", "1")["item"]["content"] == {"focus": "a"}
    newest = call(runner, "history", "active_context")["versions"][0]
    assert (newest["version"], newest["content"]) == (3, {"focus": "a"})


def test_purge_asks_first_refuses_a_live_item_and_then_removes_the_history(runner, project):
    d = call(runner, "decisions", "add", "a plan to erase")
    live = fails(runner, "purge", "decision", str(d["id"]), "--yes")
    assert "still exists" in live.stderr and "delete it first" in live.stderr
    call(runner, "decisions", "delete", str(d["id"]))
    declined = fails(runner, "purge", "decision", str(d["id"]), input="n\n")
    assert "cannot be undone" in declined.stderr
    assert len(call(runner, "history", "decision", str(d["id"]))["versions"]) == 2  # nothing purged
    purged = call(runner, "purge", "decision", str(d["id"]), "--yes")
    assert purged["purged"] == {"type": "decision", "id": d["id"], "versions": 2}
    gone = fails(runner, "history", "decision", str(d["id"]))
    assert f"decision {d['id']} has no history" in gone.stderr


def test_history_of_an_item_without_an_id_says_to_pass_one(runner, project):
    result = fails(runner, "history", "decision")
    assert "pass item_id" in result.stderr
