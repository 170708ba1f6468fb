"""`homeport verify` and `--cite` from the shell: exit 0 while citations are fresh or moved, 1 once one is stale."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from homeport.cli import cli

CODE = (
    "def charge(card):\n    total = card.amount * 100\n    return gateway.send(total)\n\n\n"
    "def refund(card):\n    return gateway.undo(card)\n"
)


@pytest.fixture
def runner(shell_home) -> CliRunner:
    return CliRunner()


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "billing.py").write_text(CODE)
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=root, check=True)
    monkeypatch.chdir(root)
    return root.resolve()


def invoke(runner: CliRunner, *args: str) -> Result:
    return runner.invoke(cli, list(args))


def test_verify_exits_0_while_fresh_or_moved_and_1_once_a_citation_changed(runner, project):
    added = invoke(runner, "decisions", "add", "Charges are in cents", "--cite", "billing.py:1-3", "--json")
    assert added.exit_code == 0, added.output
    invoke(runner, "decisions", "add", "Refunds undo the charge", "--cite", "billing.py#refund")

    clean = invoke(runner, "verify", "--json")
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.stdout)["counts"]["fresh"] == 2

    (project / "billing.py").write_text("import gateway\n" + CODE)
    moved = invoke(runner, "verify")
    assert moved.exit_code == 0, moved.output
    assert "moved" in moved.stdout and "billing.py:2-4" in moved.stdout

    confirmed = invoke(runner, "confirm", "decision", str(json.loads(added.stdout)["id"]), "--json")
    assert confirmed.exit_code == 0 and json.loads(confirmed.stdout)["citation_status"] == "fresh", confirmed.output
    again = json.loads(invoke(runner, "verify", "--json", "--all").stdout)
    assert next(c["lines"] for i in again["items"] for c in i["citations"]) == "2-4"

    (project / "billing.py").write_text(CODE.replace("* 100", "* 1000"))
    stale = invoke(runner, "verify", "--json")
    assert stale.exit_code == 1, stale.output
    report = json.loads(stale.stdout)
    assert report["failing"] and [i["citation_status"] for i in report["items"]] == ["changed"]
    listed = invoke(runner, "decisions", "list")
    assert "cites: changed billing.py:2-4" in listed.stdout  # anchored there by confirm

    (project / "billing.py").unlink()
    gone = invoke(runner, "verify", "--json")
    assert gone.exit_code == 1 and json.loads(gone.stdout)["counts"]["missing"] == 2


def test_a_cite_outside_the_project_fails_in_one_line_naming_it(runner, project):
    result = invoke(runner, "decisions", "add", "x", "--cite", "../elsewhere.py:1")
    assert result.exit_code != 0
    assert "'../elsewhere.py'" in result.output and "Traceback" not in result.output


def test_a_cite_that_is_neither_form_is_a_usage_error(runner, project):
    result = invoke(runner, "decisions", "add", "x", "--cite", "billing.py")
    assert result.exit_code == 2 and "PATH:LINES" in result.output


def test_patterns_and_progress_take_cites_from_the_shell_too(runner, project):
    pattern = invoke(runner, "patterns", "add", "Cents", "integers", "--cite", "billing.py#charge", "--json")
    task = invoke(runner, "progress", "add", "TODO", "refunds in cents", "--cite", "billing.py:6-7", "--json")
    assert pattern.exit_code == 0 and task.exit_code == 0, pattern.output + task.output
    assert json.loads(pattern.stdout)["citation_status"] == json.loads(task.stdout)["citation_status"] == "fresh"
    assert json.loads(invoke(runner, "verify", "--json").stdout)["counts"]["fresh"] == 2
