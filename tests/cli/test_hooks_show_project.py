"""`homeport hooks show cursor` inside a project names that project, not a placeholder (issue 27)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from homeport.cli import cli


def cursor_server(output: str) -> dict:
    body = output[output.index("{") : output.rindex("}") + 1]
    return json.loads(body)["mcpServers"]["homeport"]


def test_hooks_show_cursor_inside_a_project_prints_the_projects_real_path(shell_in_project):
    (shell_in_project / "src").mkdir()
    result = CliRunner().invoke(cli, ["hooks", "show", "cursor"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "/absolute/path/to/project" not in result.output
    assert cursor_server(result.output)["args"] == ["serve", "--workspace", str(shell_in_project.resolve())]


def test_hooks_show_cursor_from_a_subdirectory_names_the_project_root(shell_in_project, monkeypatch):
    (shell_in_project / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(shell_in_project / "src" / "deep")
    result = CliRunner().invoke(cli, ["hooks", "show", "cursor"])
    assert cursor_server(result.output)["args"][-1] == str(shell_in_project.resolve())


def test_hooks_show_cursor_outside_any_project_keeps_the_placeholder(shell_home, monkeypatch):
    monkeypatch.chdir("/")
    result = CliRunner().invoke(cli, ["hooks", "show", "cursor"])
    assert result.exit_code == 0, result.output
    assert cursor_server(result.output)["args"][-1] == "/absolute/path/to/project"
