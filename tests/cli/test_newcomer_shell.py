"""What a newcomer tripped over at the shell (issue 27): exit codes, hints and lines that read as meant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from homeport.cli import cli


@pytest.fixture
def runner(shell_home, monkeypatch, tmp_path) -> CliRunner:
    monkeypatch.setenv("HOMEPORT_STATE_DIR", str(tmp_path / "state"))
    return CliRunner()


@pytest.fixture
def project(shell_in_project) -> Path:
    return shell_in_project.resolve()


def test_directory_show_on_a_fresh_setup_says_there_is_none_yet_and_how_to_create_one(runner, project):
    result = runner.invoke(cli, ["directory", "show"])
    assert result.exit_code == 0, result.output
    assert "no directory yet" in result.stdout
    assert "homeport directory add-org" in result.stdout


def test_directory_show_as_json_on_a_fresh_setup_is_an_empty_directory(runner, project):
    result = runner.invoke(cli, ["directory", "show", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"organizations": [], "members": [], "workspace_roots": {}}


def test_directory_show_of_a_broken_directory_file_still_fails(runner, project, tmp_path):
    broken = tmp_path / "directory.toml"
    broken.write_text("[organizations\n")
    broken.chmod(0o600)
    result = runner.invoke(cli, ["directory", "show", "--directory", str(broken)])
    assert result.exit_code == 1, result.output
    assert str(broken) in result.stderr


def test_data_get_of_a_missing_key_exits_1_naming_the_category_and_key(runner, project):
    assert runner.invoke(cli, ["data", "set", "cfg", "a", "1"]).exit_code == 0
    result = runner.invoke(cli, ["data", "get", "cfg", "nope"])
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "'cfg'" in lines[0] and "'nope'" in lines[0] and "homeport data get" in lines[0]
    assert "get_custom_data" not in lines[0]


def test_data_get_of_a_missing_key_as_json_exits_1_too(runner, project):
    result = runner.invoke(cli, ["data", "get", "cfg", "nope", "--json"])
    assert result.exit_code == 1, result.output
    assert result.stdout == ""


def test_data_get_of_a_present_key_and_of_an_empty_category_exit_0(runner, project):
    assert runner.invoke(cli, ["data", "set", "cfg", "a", "1"]).exit_code == 0
    assert runner.invoke(cli, ["data", "get", "cfg", "a"]).exit_code == 0
    listed = runner.invoke(cli, ["data", "get", "nothing-here"])
    assert listed.exit_code == 0 and "no custom data" in listed.stdout


def test_import_replace_without_a_terminal_names_the_yes_flag_instead_of_a_bare_aborted(runner, project):
    assert runner.invoke(cli, ["decisions", "add", "Keep me"]).exit_code == 0
    assert runner.invoke(cli, ["export"]).exit_code == 0
    result = runner.invoke(cli, ["import", "--mode", "replace"])
    assert result.exit_code == 1, result.output
    assert "Aborted!" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: ") and "--yes" in last and "nothing was replaced" in last


def test_import_replace_still_goes_ahead_when_the_answer_is_yes(runner, project):
    assert runner.invoke(cli, ["decisions", "add", "Keep me"]).exit_code == 0
    assert runner.invoke(cli, ["export"]).exit_code == 0
    assert runner.invoke(cli, ["decisions", "add", "Added after the export"]).exit_code == 0
    result = runner.invoke(cli, ["import", "--mode", "replace"], input="y\n")
    assert result.exit_code == 0, result.output
    listed = json.loads(runner.invoke(cli, ["decisions", "list", "--json"]).stdout)
    assert [d["summary"] for d in listed["decisions"]] == ["Keep me"]


def test_where_prints_no_line_with_trailing_spaces(runner, project):
    result = runner.invoke(cli, ["where"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines and [line for line in lines if line != line.rstrip()] == []
    assert any(line.startswith("workspace") and str(project) in line for line in lines)


def test_where_keeps_each_field_on_one_line_under_its_label(runner, project):
    result = runner.invoke(cli, ["where"])
    labels = [line.split()[0] for line in result.stdout.splitlines() if line.strip()]
    assert labels[:4] == ["workspace", "source", "store", "why"]
    assert all(line[0] != " " for line in result.stdout.splitlines() if line.strip())


def test_the_shells_no_workspace_error_names_only_what_a_shell_user_can_set(runner, shell_home, monkeypatch):
    monkeypatch.chdir("/")
    result = runner.invoke(cli, ["decisions", "list"])
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: no workspace"), result.stderr
    line = lines[0]
    assert "-w/--workspace" in line and "HOMEPORT_WORKSPACE" in line
    assert "filesystem root" in line  # why the current directory was refused
    for mcp_only in ("header", "query", "session", "roots", "HTTP only", "use_workspace", "X-Workspace-Id"):
        assert mcp_only not in line, (mcp_only, line)
    assert len(line) < 250, len(line)
