"""Branch-aware memory from the shell: lists say what they left out, `homeport promote` shows it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from homeport.cli import cli

GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args],
        cwd=root,
        env=GIT_ENV,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def runner(shell_home) -> CliRunner:
    return CliRunner()


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "README").write_text("shop\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    monkeypatch.chdir(root)
    return root.resolve()


def run(runner: CliRunner, *args: str) -> Result:
    result = runner.invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_a_list_on_main_says_how_many_branch_decisions_it_left_out_and_promote_shows_them(runner, project):
    git(project, "checkout", "-q", "-b", "feat/cache")
    (project / "cache.py").write_text("cache = {}\n")
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "cache")
    run(runner, "decisions", "add", "Cache reads for a minute")
    run(runner, "patterns", "add", "Read-through cache", "fill on miss")
    git(project, "checkout", "-q", "main")

    listed = run(runner, "decisions", "list").output
    assert "Cache reads" not in listed
    assert "1 hidden, written on branches not merged here: feat/cache (1)" in listed
    assert "homeport promote BRANCH" in listed
    as_json = json.loads(run(runner, "decisions", "list", "--json").stdout)
    assert as_json["hidden_on_other_branches"] == 1 and as_json["decisions"] == []
    assert "1 hidden" in run(runner, "patterns", "list").output

    promoted = run(runner, "promote", "feat/cache").output
    assert "promoted" in promoted and "1 decision(s), 1 pattern(s)" in promoted
    listed = run(runner, "decisions", "list").output
    assert "Cache reads" in listed and "hidden" not in listed
