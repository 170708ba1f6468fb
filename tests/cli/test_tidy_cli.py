"""`homeport tidy` as a person types it: propose, review, amend, apply, revert; refusals as one line."""

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


def run(runner: CliRunner, *args: str) -> Result:
    result = runner.invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result


def call(runner: CliRunner, *args: str) -> dict:
    return json.loads(run(runner, *args, "--json").stdout)


def test_propose_shows_a_reviewable_diff_and_apply_then_revert_brings_the_item_back(runner, project):
    a = call(runner, "decisions", "add", "Use SQLite in WAL mode for the local store")
    call(runner, "decisions", "add", "Use SQLite with WAL mode for the local store")
    call(runner, "decisions", "add", "Never cache workspace resolutions")
    call(runner, "decisions", "add", "Cache workspace resolutions between calls")
    out = run(runner, "tidy", "propose").output
    assert "+ [2] duplicate" in out and f"merge decision:{a['id']} into decision:2" in out
    assert "? [1] contradiction" in out and "negation_differs" in out
    assert "homeport tidy apply 1" in out
    refused = runner.invoke(cli, ["tidy", "apply", "1"])
    assert refused.exit_code == 1 and "more than 5%" in refused.stderr and "--force" in refused.stderr
    assert "undo with: homeport tidy revert 1" in run(runner, "tidy", "apply", "1", "--force").output
    listed = call(runner, "decisions", "list")
    assert listed["hidden_expired"] == 1 and a["id"] not in {d["id"] for d in listed["decisions"]}
    assert "applied" in run(runner, "tidy", "list").output
    assert "1 hidden: archived, superseded or expired" in run(runner, "decisions", "list").output
    run(runner, "tidy", "revert", "1")
    assert a["id"] in {d["id"] for d in call(runner, "decisions", "list")["decisions"]}


def test_amend_adds_operations_by_type_and_id_and_refuses_nothing_to_do(runner, project):
    old = call(runner, "decisions", "add", "Tokens in a JSON file")
    new = call(runner, "decisions", "add", "Tokens in the OS keyring")
    cs = call(runner, "tidy", "propose")
    amended = call(
        runner,
        "tidy",
        "amend",
        str(cs["id"]),
        "--supersede",
        f"decision:{old['id']}",
        f"decision:{new['id']}",
        "--reason",
        "the keyring replaced the file",
    )
    [entry] = amended["entries"]
    assert entry["kind"] == "manual" and entry["reason"] == "the keyring replaced the file"
    assert entry["operations"] == [
        {"op": "supersede", "item": {"type": "decision", "id": old["id"]}, "by": {"type": "decision", "id": new["id"]}}
    ]
    nothing = runner.invoke(cli, ["tidy", "amend", str(cs["id"])])
    assert nothing.exit_code == 2 and "nothing to amend" in nothing.output
    state = call(runner, "tidy", "lifecycle", f"decision:{new['id']}", "--pin")
    assert state["state"]["pinned"] is True
