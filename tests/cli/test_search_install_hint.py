"""The shell prints a search's note as written: the install hint keeps `[semantic]` (issue 27)."""

from __future__ import annotations

from click.testing import CliRunner

from homeport.cli import cli


def test_the_install_hint_of_search_by_meaning_keeps_the_extra_in_brackets(shell_in_project, monkeypatch):
    monkeypatch.setattr("homeport.embedding.model.missing_modules", lambda: ["onnxruntime"])
    runner = CliRunner()
    assert runner.invoke(cli, ["decisions", "add", "Use SQLite WAL", "--no-daemon"]).exit_code == 0
    result = runner.invoke(cli, ["search", "wal", "--no-daemon"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "pip install 'homeport[semantic]'" in result.output
