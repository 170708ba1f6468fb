"""The `homeport` command as a person types it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from homeport.cli import cli


@pytest.fixture
def runner(shell_home):
    return CliRunner()


def test_help_lists_commands_and_explains_flags(runner):
    out = runner.invoke(cli, ["--help"]).output
    assert "serve" in out and "where" in out
    serve = runner.invoke(cli, ["serve", "--help"]).output
    for flag in ("--http", "--host", "--port", "--workspace", "--allow-root", "--require-explicit-workspace"):
        assert flag in serve
    assert "HOMEPORT_WORKSPACE" in serve


def test_where_reports_the_git_root_from_a_subdirectory(runner, tmp_path, monkeypatch):
    (tmp_path / "app" / ".git").mkdir(parents=True)
    (tmp_path / "app" / "src").mkdir()
    monkeypatch.chdir(tmp_path / "app" / "src")
    result = runner.invoke(cli, ["where", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["workspace"] == str((tmp_path / "app").resolve())
    assert report["source"] == "cwd" and report["store_exists"] is False
    assert "git repository" in report["why"]


def test_where_with_a_path_uses_it_as_the_argument(runner, tmp_path):
    (tmp_path / "p").mkdir()
    result = runner.invoke(cli, ["where", str(tmp_path / "p")])
    assert result.exit_code == 0
    assert "argument" in result.output and "not created yet" in result.output


def test_where_honours_the_workspace_env_variable(runner, tmp_path, monkeypatch):
    (tmp_path / "p").mkdir()
    monkeypatch.setenv("HOMEPORT_WORKSPACE", str(tmp_path / "p"))
    monkeypatch.chdir("/")
    report = json.loads(runner.invoke(cli, ["where", "--json"]).output)
    assert report["source"] == "config"


def test_where_from_root_fails_in_one_line_with_every_way(runner, monkeypatch):
    monkeypatch.chdir("/")
    result = runner.invoke(cli, ["where"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "--workspace" in result.output and "refused" in result.output


def test_serve_refuses_a_missing_default_workspace_at_start(runner, tmp_path):
    result = runner.invoke(cli, ["serve", "--workspace", str(tmp_path / "missing")])
    assert result.exit_code == 1
    assert "does not exist" in result.output and str(tmp_path / "missing") in result.output


def test_serve_refuses_a_missing_allow_root(runner, tmp_path):
    result = runner.invoke(cli, ["serve", "--http", "--allow-root", str(tmp_path / "nope")])
    assert result.exit_code != 0
    assert "--allow-root" in result.output and "nope" in result.output


@pytest.mark.parametrize(
    "how",
    [
        ["where", "--json", "../b"],
        ["where", "--json", "-w", "../b"],
        ["where", "--json", "-w", "~/b"],
        ["where", "--json", "-w", "./../b/"],
    ],
)
def test_cli_paths_are_resolved_against_the_shells_directory_and_home(runner, tmp_path, monkeypatch, how):
    # A person types relative paths and `~`; only MCP arguments must be absolute.
    home = tmp_path / "home"
    for project in (home / "a", home / "b"):
        (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(home / "a")
    result = runner.invoke(cli, how)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["workspace"] == str((home / "b").resolve())


def test_cli_relative_workspace_in_a_memory_command_writes_to_that_project(runner, tmp_path, monkeypatch):
    home = tmp_path / "home"
    for project in (home / "a", home / "b"):
        (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(home / "a")
    done = runner.invoke(cli, ["decisions", "add", "Use WAL", "-w", "../b", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["workspace"]["root"] == str((home / "b").resolve())
    assert (home / "b" / ".homeport").is_dir() and not (home / "a" / ".homeport").exists()
